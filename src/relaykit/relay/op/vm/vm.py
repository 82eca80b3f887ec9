"""``tvm.relay.op.vm.vm``: the VM dialect's shape operators.

``shape_of`` and ``reshape_tensor`` are :mod:`relaykit.op.vm`'s; ``invoke_tvm_op`` and
``shape_func`` (which call lowered TIR functions) raise
:class:`~relaykit.errors.UnsupportedFeatureError`.
"""

from relaykit.op.vm import reshape_tensor, shape_of
from relaykit.relay._facade import NOT_YET, module_getattr, unsupported

_NAMES: list[str] = ["invoke_tvm_op", "shape_func"]

__all__ = ["reshape_tensor", "shape_of", *_NAMES]
globals().update(unsupported(__name__, _NAMES, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
