"""``tvm.relay.frontend.mxnet_qnn_op_utils``: not in relaykit.

In TVM: TVM's mxnet_qnn_op_utils importer. The module imports so that scripts naming it
load; each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError`
when used.
"""

from relaykit.relay._facade import FRAMEWORK, module_getattr, unsupported

_NAMES: list[str] = [
    "dequantize_mxnet_min_max", "get_conv_mkldnn_requantized_scale_outDtype",
    "get_mkldnn_int8_scale", "get_mkldnn_requantize_scale_outDtype",
    "get_mkldnn_uint8_scale", "quantize_conv_bias_mkldnn_from_var",
    "quantize_conv_weights_bias_channel_mkldnn_from_var", "quantize_mxnet_min_max",
    "zero_centered_int8_quantized_range", "zero_centered_uint8_quantized_range",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, FRAMEWORK))
__getattr__ = module_getattr(__name__, FRAMEWORK)
