"""``tvm.relay.op.strategy.bifrost``: not in relaykit.

In TVM: TVM's bifrost operator strategies. The module imports so that scripts naming it
load; each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError`
when used.
"""

from relaykit.relay._facade import SCHEDULES, module_getattr, unsupported

from .generic import _NAMES as _GENERIC  # TVM's module re-exports generic's names

_NAMES: list[str] = [
    *_GENERIC,
    "conv2d_strategy_bifrost",
    "conv2d_winograd_without_weight_transform_strategy_bifrost",
    "dense_strategy_bifrost",
]

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, SCHEDULES))
__getattr__ = module_getattr(__name__, SCHEDULES)
