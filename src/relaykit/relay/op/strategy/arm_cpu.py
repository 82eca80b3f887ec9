"""``tvm.relay.op.strategy.arm_cpu``: not in relaykit.

In TVM: TVM's arm_cpu operator strategies. The module imports so that scripts naming it
load; each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError`
when used.
"""

from relaykit.relay._facade import SCHEDULES, module_getattr, unsupported

from .generic import _NAMES as _GENERIC  # TVM's module re-exports generic's names

_NAMES: list[str] = [
    *_GENERIC,
    "arm_cpu_tir_strategy",
    "bitserial_conv2d_strategy_arm_cpu",
    "concatenate_strategy_arm_cpu",
    "conv1d_strategy_arm_cpu",
    "conv2d_NCHWc_strategy_arm_cpu",
    "conv2d_gemm_without_weight_transform_strategy_arm_cpu",
    "conv2d_strategy_arm_cpu",
    "conv2d_transpose_strategy_arm_cpu",
    "conv2d_winograd_without_weight_transform_strategy_arm_cpu",
    "depthwise_conv2d_NCHWc_strategy_arm_cpu",
    "matmul_strategy_arm_cpu",
    "schedule_bitserial_dense_arm_cpu",
    "schedule_dense_arm_cpu",
    "schedule_injective_arm_cpu",
    "schedule_pool_arm_cpu",
    "schedule_reduce_cpu",
    "wrap_compute_conv2d_gemm",
    "wrap_compute_conv2d_winograd_nnpack",
]

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, SCHEDULES))
__getattr__ = module_getattr(__name__, SCHEDULES)
