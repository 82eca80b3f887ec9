"""``tvm.relay.qnn.op.legalizations``: not in relaykit.

In TVM: QNN's legalizations. The module imports so that scripts naming it load; each of
TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import NOT_YET, module_getattr, unsupported

_NAMES: list[str] = [
    "IN_CHANNEL_VECTOR_LENGTH", "OUT_CHANNEL_VECTOR_LENGTH", "get_scalar_from_constant",
    "hardswish_func", "helper_align_up", "helper_change_dtypes_to_be_same",
    "helper_change_dtypes_to_int8", "helper_change_dtypes_to_uint8",
    "helper_change_dtypes_to_uint8_int8", "helper_no_fast_int8_hw_legalization",
    "is_fast_int8_on_intel", "legalize_qnn_conv2d", "legalize_qnn_conv2d_transpose",
    "legalize_qnn_dense", "qnn_conv2d_legalize", "qnn_conv2d_transpose_legalize",
    "qnn_dense_legalize", "register_qnn_unary_op_legalize",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
