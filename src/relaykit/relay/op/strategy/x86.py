"""``tvm.relay.op.strategy.x86``: not in relaykit.

In TVM: TVM's x86 operator strategies. The module imports so that scripts naming it
load; each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError`
when used.
"""

from relaykit.relay._facade import SCHEDULES, module_getattr, unsupported

from .generic import _NAMES as _GENERIC  # TVM's module re-exports generic's names

_NAMES: list[str] = [
    *_GENERIC,
    "batch_matmul_strategy_cpu",
    "batch_norm_strategy_cpu",
    "bitserial_conv2d_strategy_cpu",
    "bitserial_dense_strategy_cpu",
    "concatenate_strategy_cpu",
    "conv1d_strategy_cpu",
    "conv2d_NCHWc_strategy_cpu",
    "conv2d_strategy_cpu",
    "conv2d_transpose_strategy_cpu",
    "conv2d_winograd_without_weight_transform_strategy_cpu",
    "conv3d_strategy_cpu",
    "conv3d_transpose_strategy_cpu",
    "dense_pack_strategy_cpu",
    "dense_strategy_cpu",
    "depthwise_conv2d_NCHWc_strategy_cpu",
    "fast_softmax_strategy_cpu",
    "log_softmax_strategy_cpu",
    "matmul_strategy_cpu",
    "roi_align_strategy_cpu",
    "scatter_nd_strategy_cpu",
    "schedule_adaptive_pool_cpu",
    "schedule_injective_cpu",
    "schedule_pool_cpu",
    "schedule_reduce_cpu",
    "softmax_strategy_cpu",
    "sparse_conv2d_strategy_cpu",
    "sparse_dense_strategy_cpu",
]

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, SCHEDULES))
__getattr__ = module_getattr(__name__, SCHEDULES)
