"""``tvm.relay.op.contrib.bnns``: not in relaykit.

In TVM: TVM's bnns BYOC integration (an accelerator or vendor library). The module
imports so that scripts naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import GPU, module_getattr, unsupported

_NAMES: list[str] = [
    "avg_pool2d_check", "bias_check", "check_conv", "check_dense", "conv2d_check", "dense",
    "dtype_is_supported", "global_avg_pool2d_check", "global_max_pool2d_check",
    "instance_norm_check", "make_conv_pattern", "make_dense_bias_gelu_pattern",
    "make_dense_bias_pattern", "max_pool2d_check", "partition_for_bnns", "pattern_table",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, GPU))
__getattr__ = module_getattr(__name__, GPU)
