"""``tvm.relay.op.strategy.hexagon``: not in relaykit.

In TVM: TVM's hexagon operator strategies. The module imports so that scripts naming it
load; each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError`
when used.
"""

from relaykit.relay._facade import SCHEDULES, module_getattr, unsupported

from .generic import _NAMES as _GENERIC  # TVM's module re-exports generic's names

_NAMES: list[str] = [
    *_GENERIC,
    "batch_matmul_strategy_hexagon",
    "concatenate_strategy_hexagon",
    "conv2d_NCHWc_strategy_hexagon",
    "conv2d_strategy_hexagon",
    "conv2d_transpose_strategy_hexagon",
    "dense_pack_strategy_hexagon",
    "dense_strategy_hexagon",
    "fast_softmax_strategy_cpu",
    "schedule_adaptive_pool_hexagon",
    "schedule_concatenate_hexagon",
    "schedule_injective_hexagon",
    "schedule_pad_hexagon",
    "schedule_pool_hexagon",
    "schedule_reduce_hexagon",
    "softmax_strategy_hexagon",
]

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, SCHEDULES))
__getattr__ = module_getattr(__name__, SCHEDULES)
