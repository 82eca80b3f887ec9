"""``tvm.relay.op.strategy.hls``: not in relaykit.

In TVM: TVM's hls operator strategies. The module imports so that scripts naming it
load; each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError`
when used.
"""

from relaykit.relay._facade import SCHEDULES, module_getattr, unsupported

from .generic import _NAMES as _GENERIC  # TVM's module re-exports generic's names

_NAMES: list[str] = [
    *_GENERIC,
    "bitserial_conv2d_strategy_hls",
    "conv2d_NCHWc_strategy_hls",
    "conv2d_strategy_hls",
    "conv2d_transpose_strategy_hls",
    "dense_strategy_hls",
    "log_softmax_strategy_hls",
    "schedule_adaptive_pool_hls",
    "schedule_concatenate_hls",
    "schedule_injective_hls",
    "schedule_pool_hls",
    "schedule_reduce_hls",
    "softmax_strategy_hls",
]

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, SCHEDULES))
__getattr__ = module_getattr(__name__, SCHEDULES)
