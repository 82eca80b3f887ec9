"""``tvm.relay.op.contrib.arm_compute_lib``: not in relaykit.

In TVM: TVM's arm_compute_lib BYOC integration (an accelerator or vendor library). The
module imports so that scripts naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import GPU, module_getattr, unsupported

_NAMES: list[str] = [
    "OpAttrContext", "add", "arm_compute_lib_pattern_table", "avg_pool2d",
    "check_dilation", "conv2d", "dense", "depthwise_conv2d", "global_avg_pool2d",
    "global_max_pool2d", "is_arm_compute_runtime_enabled", "is_per_channel_quantization",
    "max_pool2d", "maximum", "partition_for_arm_compute_lib", "preprocess_module",
    "qnn_add", "qnn_conv2d", "qnn_dense",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, GPU))
__getattr__ = module_getattr(__name__, GPU)
