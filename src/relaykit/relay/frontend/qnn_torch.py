"""``tvm.relay.frontend.qnn_torch``: not in relaykit.

In TVM: the quantized-PyTorch conversion helpers. The module imports so that scripts
naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import NOT_YET, module_getattr, unsupported

_NAMES: list[str] = [
    "ConvPackedParam", "QNNParam", "add_input_quant_params_to_op_inputs",
    "add_quant_params", "add_quant_params_to_outputs", "apply_with_fp32_fallback",
    "apply_with_upcast", "convert_map", "get_weight_quant_params",
    "inline_input_quant_params_for_fx", "make_conv_packed_param", "make_qnn_param",
    "quantize_numpy", "quantize_scalar", "quantized_relu", "quantized_sigmoid",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
