"""``tvm.relay.op.contrib.tensorrt``: not in relaykit.

In TVM: TVM's tensorrt BYOC integration (an accelerator or vendor library). The module
imports so that scripts naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import GPU, module_getattr, unsupported

_NAMES: list[str] = [
    "CheckFunc", "IsComputeIntensiveGraph", "RemoveDropout", "RemoveDropoutPass",
    "adaptive_avg_pool2d_checker", "adaptive_max_pool2d_checker", "add_checker",
    "avg_pool_2d_checker", "avg_pool_3d_checker", "batch_matmul_checker",
    "batch_norm_checker", "bias_add_checker", "binary_op_pattern",
    "binary_op_pattern_with_const", "concatenate_checker", "conv1d_checker",
    "conv2d_checker", "conv2d_transpose_checker", "conv3d_checker",
    "conv3d_transpose_checker", "dense_checker", "expand_dims_checker", "get_args",
    "get_attrs", "get_op_name", "get_tensorrt_remove_no_mac_subgraphs",
    "get_tensorrt_target", "get_tensorrt_use_fp16", "get_tensorrt_use_implicit_batch_mode",
    "get_tensorrt_version", "global_avg_pool_2d_checker", "global_max_pool_2d_checker",
    "is_supported_trt_type", "is_tensorrt_compiler_enabled", "is_tensorrt_runtime_enabled",
    "is_valid_subgraph", "layer_norm_checker", "layout_transform_checker", "logger",
    "make_and_checker", "make_predicate", "make_trt_version_checker",
    "max_pool_2d_checker", "max_pool_3d_checker", "multiply_checker", "pad_checker",
    "partition_for_tensorrt", "pattern_table", "proj_five_op_pattern_with_const",
    "prune_tensorrt_subgraphs", "reduce_checker", "reshape_checker", "softmax_checker",
    "split_checker", "squeeze_checker", "standard_predicate", "strided_slice_checker",
    "transpose_checker", "unary_op_pattern", "unary_op_pattern_with_any_tuple",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, GPU))
__getattr__ = module_getattr(__name__, GPU)
