"""``tvm.relay.op.contrib.cutlass``: not in relaykit.

In TVM: TVM's cutlass BYOC integration (an accelerator or vendor library). The module
imports so that scripts naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import GPU, module_getattr, unsupported

_NAMES: list[str] = [
    "check_batch_matmul", "check_conv2d", "check_conv2d_backward_weight",
    "check_conv2d_common", "check_conv2d_residual", "check_conv2d_transpose",
    "check_dtype", "check_gemm", "get_root_call", "is_depthwise_conv2d",
    "make_batch_matmul_pattern", "make_conv2d_backward_weight_pattern",
    "make_conv2d_pattern", "make_conv2d_transpose_pattern", "make_gelu_pattern",
    "make_gemm_pattern", "make_residual_block_pattern", "partition_for_cutlass",
    "pattern_table",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, GPU))
__getattr__ = module_getattr(__name__, GPU)
