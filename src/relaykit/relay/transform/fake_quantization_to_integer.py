"""``tvm.relay.transform.fake_quantization_to_integer``: not in relaykit.

In TVM: FakeQuantizationToInteger's operator rules. The module imports so that scripts
naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import NOT_YET, module_getattr, unsupported

_NAMES: list[str] = [
    "adaptive_avgpool1d", "approx_equal", "avgpool2d", "batch_matmul", "bias_add",
    "broadcast_to", "clip", "concat", "conv2d", "conv2d_transpose", "dense", "dequantize",
    "fold_constant", "get_binary_types", "get_zeros", "global_avgpool2d", "infer_shape",
    "leaky_relu", "mean", "pad", "quantize", "register_binary_identity",
    "register_binary_qnn", "register_unary_identity", "register_unary_qnn", "relu",
    "softmax", "split", "take", "topk",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
