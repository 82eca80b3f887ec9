"""``tvm.relay.op.contrib.mrvl``: not in relaykit.

In TVM: TVM's mrvl BYOC integration (an accelerator or vendor library). The module
imports so that scripts naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import GPU, module_getattr, unsupported

_NAMES: list[str] = [
    "IsComputeIntensiveGraph", "IsSupportedGraph", "MrvlRemoveCopyPass",
    "MrvlRemoveDropoutPass", "RemoveCopy", "RemoveDropout", "add_attributes",
    "avgpool2d_nhwc2nhwc", "batch_flatten_mrvl", "concat", "conv2d_nhwc2nhwc", "fc_ni2no",
    "first_op_unsupported", "globalavgpool2d_nhwc2nhwc", "globalmaxpool2d_nhwc2nhwc",
    "is_activation", "is_valid_batch_size", "layout_transform_nchw2nhwc",
    "maxpool2d_nhwc2nhwc", "mrvl_pattern_table",
    "mrvl_register_avg_pool2d_attr_funcs_for_convert_layout",
    "mrvl_register_conv2d_attr_funcs_for_convert_layout",
    "mrvl_register_global_avg_pool2d_attr_funcs_for_convert_layout",
    "mrvl_register_max_pool2d_attr_funcs_for_convert_layout", "partition_for_mrvl",
    "repartition_mrvl_subgraphs", "repartition_subgraph", "reshape_mrvl", "squeeze_mrvl",
    "summation",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, GPU))
__getattr__ = module_getattr(__name__, GPU)
