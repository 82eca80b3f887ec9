"""Real backends and TVM's ``tvm.contrib`` helpers, one folder or module each.

- :mod:`.graph_executor`: ``GraphModule`` and ``create`` (``tvm.contrib.graph_executor``).
- :mod:`.ccompiler`: a C-source backend compiled by the system C compiler.
- :mod:`.jsonref`: a JSON-graph backend with its own NumPy kernels.
- :mod:`.dnnl`: oneDNN.

Each backend folder declares its :class:`relaykit.backends.Backend` record in
``backend.py``; relaykit finds it by name (:data:`relaykit.backends.BUILTIN`), so
nothing here needs importing before a backend is used.
"""

# TVM scripts reach the executor as an attribute after `import tvm` (tvm.contrib.graph_executor);
# it is a thin module over relaykit.backend, not a backend: loading it loads no backend.
from . import graph_executor as graph_executor
