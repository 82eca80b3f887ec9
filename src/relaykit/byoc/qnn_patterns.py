"""Composite patterns for quantized graphs, for a backend's pattern table.

Three shapes of int8 graph reach a backend, and each has its chain:

- QNN operators (from the ONNX and PyTorch frontends or FakeQuantizationToInteger):
  :func:`qnn_conv2d_pattern` / :func:`qnn_dense_pattern` match ``qnn.conv2d`` (or
  ``qnn.dense``) → bias ``add``/``nn.bias_add`` → ``qnn.requantize`` → ``clip``, the
  last three optional where the arguments say so;
- quantize/dequantize pairs around a float operator (QDQ models):
  :func:`qdq_pattern` matches ``qnn.dequantize`` → op → ``qnn.quantize``;
- ``relay.quantize``'s realized graphs, plain integer operators:
  :func:`shift_requantize_conv2d_pattern` matches ``nn.conv2d`` (int8 in, int32 out) →
  constant ``add`` → ``nn.relu`` → rounding ``add`` → ``right_shift`` → ``clip`` →
  ``cast``, the add/relu/rounding steps optional.

Constants (weights, biases, scales, zero points) are part of each match, so the
composite function carries them. ``annotation.stop_fusion`` between two layers needs
no pattern: it is transparent to target annotation (:mod:`relaykit.byoc.targets`).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 4), dtype="int8")
>>> s, z = relay.const(0.5), relay.const(0)
>>> y = relay.qnn.op.quantize(
...     relay.nn.relu(relay.qnn.op.dequantize(x, s, z)), s, z, out_dtype="int8")
>>> qdq_pattern("nn.relu").match(y)
True
"""

from __future__ import annotations

from relaykit.dataflow_pattern.constructors import is_constant, is_op, wildcard
from relaykit.dataflow_pattern.pattern import DFPattern

__all__ = [
    "qdq_pattern",
    "qnn_conv2d_pattern",
    "qnn_dense_pattern",
    "shift_requantize_conv2d_pattern",
]


def _bias(x: DFPattern) -> DFPattern:
    return is_op("add")(x, is_constant()) | is_op("nn.bias_add")(x, is_constant())


def _requantize_chain(
    core: DFPattern, with_bias: bool, with_requantize: bool, with_clip: bool
) -> DFPattern:
    out = _bias(core) if with_bias else core
    if with_requantize:
        out = is_op("qnn.requantize")(
            out, is_constant(), is_constant(), is_constant(), is_constant()
        )
    if with_clip:
        out = is_op("clip")(out)
    return out


def qnn_conv2d_pattern(
    with_bias: bool = True, with_requantize: bool = True, with_clip: bool = True
) -> DFPattern:
    """``qnn.conv2d`` (constant weight and quantization parameters) → bias add →
    ``qnn.requantize`` → ``clip``; each later step present when its flag says so."""
    conv = is_op("qnn.conv2d")(
        wildcard(), is_constant(), is_constant(), is_constant(), is_constant(), is_constant()
    )
    return _requantize_chain(conv, with_bias, with_requantize, with_clip)


def qnn_dense_pattern(
    with_bias: bool = True, with_requantize: bool = True, with_clip: bool = False
) -> DFPattern:
    """``qnn.dense`` → bias add → ``qnn.requantize`` → ``clip`` (flags as for conv2d)."""
    dense = is_op("qnn.dense")(
        wildcard(), is_constant(), is_constant(), is_constant(), is_constant(), is_constant()
    )
    return _requantize_chain(dense, with_bias, with_requantize, with_clip)


def qdq_pattern(op_name: str, num_inputs: int = 1) -> DFPattern:
    """``qnn.dequantize`` of each of ``num_inputs`` inputs → ``op_name`` →
    ``qnn.quantize``: a float operator between quantize/dequantize pairs."""
    deq = [
        is_op("qnn.dequantize")(wildcard(), is_constant(), is_constant()) for _ in range(num_inputs)
    ]
    return is_op("qnn.quantize")(is_op(op_name)(*deq), is_constant(), is_constant())


def _constant() -> DFPattern:
    """A constant, or one behind ``annotation.stop_fusion`` (``relay.quantize`` puts one
    on each bias it rescales)."""
    return is_constant() | is_op("annotation.stop_fusion")(is_constant())


def shift_requantize_conv2d_pattern() -> DFPattern:
    """A convolution layer as ``relay.quantize`` realizes it, ending in int8."""
    conv = is_op("nn.conv2d")(wildcard(), is_constant()).has_attr({"out_dtype": "int32"})
    out: DFPattern = conv.optional(lambda x: is_op("add")(x, _constant()))
    out = out.optional(lambda x: is_op("nn.relu")(x))
    out = out.optional(lambda x: is_op("add")(x, is_constant()))
    out = is_op("right_shift")(out, is_constant())
    return is_op("cast")(is_op("clip")(out)).has_attr({"dtype": "int8"})
