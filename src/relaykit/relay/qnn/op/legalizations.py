"""``tvm.relay.qnn.op.legalizations``: :func:`hardswish_func` (the float hardswish TVM's
tests compare ``qnn.hardswish`` with); TVM's target-specific legalizations are not in
relaykit: those names raise :class:`~relaykit.errors.UnsupportedFeatureError` when used.

>>> hardswish_func(np.array([-4.0, 0.5, 4.0])).tolist()
[-0.0, 0.2916666666666667, 4.0]
"""

from typing import Any

import numpy as np

from relaykit.relay._facade import NOT_YET, module_getattr, unsupported

_NAMES: list[str] = [
    "IN_CHANNEL_VECTOR_LENGTH", "OUT_CHANNEL_VECTOR_LENGTH", "get_scalar_from_constant",
    "helper_align_up", "helper_change_dtypes_to_be_same",
    "helper_change_dtypes_to_int8", "helper_change_dtypes_to_uint8",
    "helper_change_dtypes_to_uint8_int8", "helper_no_fast_int8_hw_legalization",
    "is_fast_int8_on_intel", "legalize_qnn_conv2d", "legalize_qnn_conv2d_transpose",
    "legalize_qnn_dense", "qnn_conv2d_legalize", "qnn_conv2d_transpose_legalize",
    "qnn_dense_legalize", "register_qnn_unary_op_legalize",
]  # fmt: skip


def hardswish_func(x: Any) -> Any:
    """``x * clip(x + 3, 0, 6) / 6`` on NumPy arrays."""
    return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


__all__ = ["hardswish_func", *_NAMES]
globals().update(unsupported(__name__, _NAMES, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
