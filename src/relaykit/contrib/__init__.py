"""Real backends and TVM's ``tvm.contrib`` helpers, one folder or module each.

- :mod:`.graph_executor`: ``GraphModule`` and ``create`` (``tvm.contrib.graph_executor``).
- :mod:`.ccompiler`: a C-source backend compiled by the system C compiler.
- :mod:`.jsonref`: a JSON-graph backend with its own NumPy kernels.

Importing a backend's package registers its rules, patterns and codegen.
"""
