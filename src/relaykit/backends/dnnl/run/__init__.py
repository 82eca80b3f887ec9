"""The dnnl backend's third stage: run compiled regions on oneDNN.

- :mod:`.program`: the region program (JSON nodes over numbered tensors), what the
  codegen hands to the runtime;
- :mod:`.library`: finding the oneDNN wheels;
- :mod:`.native`: the C++ runtime (``native/*.cc``), compiled once, cached, loaded
  with ctypes;
- :mod:`.region`: :class:`~.region.DnnlRegion`, one region's oneDNN primitives,
  callable on arrays, with a context per executor;
- :mod:`.threads`, :mod:`.contention`: the thread count, and the (default-on) switch to a
  serial twin on a busy machine;
- :mod:`.module`: :class:`~.module.DnnlModule`, the runtime module of a build, and
  how it is exported and loaded.
"""
