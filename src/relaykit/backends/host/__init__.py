"""The host backend: the kernels relaykit's executors run for everything no external
backend took.

- :mod:`.kernels`: the kernel table (op name -> kernel) and the NumPy kernels;
- :mod:`.conv`, :mod:`.nn`: relaykit's own C kernels (convolutions, GEMM epilogues,
  Winograd, erf/GELU, softmax, layer norm), through :mod:`.native`, which compiles
  ``native/*.c`` once with the system C compiler and loads them;
- :mod:`.winograd_math`: the F(2x2, 3x3) transforms (shared with the dnnl backend).

Which nodes of a plan fuse into one native call is decided by the executor
(:mod:`relaykit.execution.fusion`), which asks these modules what they can run.
"""
