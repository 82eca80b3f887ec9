"""TVM's ``tvm.contrib`` helpers, as thin modules (``tvm.contrib.graph_executor``,
``utils``, ``download``, ``nvcc``, ``cudnn``, ``cc``, and the pipeline executor:
``pipeline_executor_build`` and ``pipeline_executor``).

relaykit's backends are not here: the built-in ones (``dnnl``, ``ccompiler``,
``jsonref`` and the host kernels) live in :mod:`relaykit.backends`, one folder each.
"""

# TVM scripts reach the executor as an attribute after `import tvm` (tvm.contrib.graph_executor);
# it is a thin module over relaykit.execution, not a backend: loading it loads no backend.
# TVM scripts ask tvm.contrib.cudnn.exists() after `import tvm` alone (relay imports it in TVM)
from . import cudnn as cudnn
from . import graph_executor as graph_executor

# tvm.contrib.utils.tempdir() works after `import tvm` alone in TVM scripts; it is stdlib-only
from . import utils as utils
