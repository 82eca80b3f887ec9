"""``tvm.relay.op.strategy.intel_graphics``: not in relaykit.

In TVM: TVM's intel_graphics operator strategies. The module imports so that scripts
naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import SCHEDULES, module_getattr, unsupported

from .generic import _NAMES as _GENERIC  # TVM's module re-exports generic's names

_NAMES: list[str] = [
    *_GENERIC,
    "conv2d_NCHWc_strategy_intel_graphics",
    "conv2d_strategy_intel_graphics",
]

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, SCHEDULES))
__getattr__ = module_getattr(__name__, SCHEDULES)
