"""``tvm.relay.op.memory``: the explicit-memory operators.

``alloc_storage``, ``alloc_tensor`` and ``kill`` are :mod:`relaykit.op.memory`'s
(their types need the ``Storage`` type of ``core.rly``); TVM's tuple-type helpers
(``flatten_tuple_type``...) raise :class:`~relaykit.errors.UnsupportedFeatureError`.
"""

from relaykit.op.memory import alloc_storage, alloc_tensor, kill
from relaykit.relay._facade import NOT_YET, module_getattr, unsupported

from . import memory as memory  # TVM's relay.op.memory.memory

_NAMES: list[str] = ["flatten_tuple_type", "from_tuple_type", "to_tuple_type"]

__all__ = ["alloc_storage", "alloc_tensor", "kill", *_NAMES]
globals().update(unsupported(__name__, _NAMES, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
