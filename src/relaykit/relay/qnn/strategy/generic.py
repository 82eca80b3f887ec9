"""``tvm.relay.qnn.strategy.generic``: not in relaykit.

In TVM: TVM's generic quantized operator strategies. The module imports so that scripts
naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import SCHEDULES, module_getattr, unsupported

_NAMES: list[str] = [
    "qnn_add_strategy", "qnn_avg_pool2d_strategy", "qnn_batch_matmul_strategy",
    "qnn_concatenate_strategy", "qnn_conv2d_strategy", "qnn_dense_pack_strategy",
    "qnn_dense_strategy", "qnn_dequantize_strategy", "qnn_mul_strategy",
    "qnn_quantize_strategy", "qnn_requantize_strategy", "qnn_subtract_strategy",
    "qnn_tanh_strategy", "wrap_compute_dequantize", "wrap_compute_qnn_avg_pool2d",
    "wrap_compute_quantize", "wrap_topi_compute", "wrap_topi_concatenate",
    "wrap_topi_qnn_batch_matmul", "wrap_topi_qnn_conv2d", "wrap_topi_qnn_dense",
    "wrap_topi_schedule",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, SCHEDULES))
__getattr__ = module_getattr(__name__, SCHEDULES)
