"""``tvm.relay.op.strategy.adreno``: not in relaykit.

In TVM: TVM's adreno operator strategies. The module imports so that scripts naming it
load; each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError`
when used.
"""

from relaykit.relay._facade import SCHEDULES, module_getattr, unsupported

from .generic import _NAMES as _GENERIC  # TVM's module re-exports generic's names

_NAMES: list[str] = [
    *_GENERIC,
    "concatenate_strategy_adreno",
    "conv2d_strategy_adreno",
    "conv2d_transpose_strategy_adreno",
    "conv2d_winograd_without_weight_transform_strategy_adreno",
    "schedule_adaptive_pool_adreno",
    "schedule_injective_adreno",
    "schedule_pool_adreno",
    "schedule_reduce_adreno",
]

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, SCHEDULES))
__getattr__ = module_getattr(__name__, SCHEDULES)
