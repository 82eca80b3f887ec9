"""``tvm.relay.op.contrib``: the pattern tables of BYOC backends (:mod:`relaykit.op.contrib`).

A backend's TVM-API module (``relay.op.contrib.dnnl``) is an attribute here, and the
built-in ones are also importable by their module path
(``from relaykit.relay.op.contrib.dnnl import partition_for_dnnl``). TVM's other
integrations (TensorRT, CUTLASS, Arm Compute Library...) import, and raise
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

import relaykit.op.contrib as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
