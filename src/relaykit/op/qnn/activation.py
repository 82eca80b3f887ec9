"""Quantized softmax (TVM's ``relay.qnn.op.softmax``): dequantize, float32
``nn.softmax`` along ``axis``, quantize to the input's dtype with the output's
parameters. (TVM's own lowering approximates the exponential with shifts; relaykit
computes the softmax the fake-quantized float graph computes, which is closer.)

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 4), dtype="int8")
>>> softmax(x, relay.const(0.1), relay.const(0), relay.const(1 / 256), relay.const(-128)).op.name
'qnn.softmax'
"""

from __future__ import annotations

from relaykit.ir.expr import Call, Expr
from relaykit.op.define import make_call

from ._common import check_scale_const, check_zero_point_const, static_dtype
from ._emulate import define_emulated_op

__all__ = ["softmax"]

define_emulated_op(
    "qnn.softmax",
    "nn.softmax",
    "relay.attrs.SoftmaxAttrs",
    "Quantized softmax: dequantize, float32 softmax, quantize.",
    __name__,
)


def softmax(
    x: Expr,
    scale: Expr,
    zero_point: Expr,
    output_scale: Expr,
    output_zero_point: Expr,
    axis: int = -1,
) -> Call:
    """TVM's ``relay.qnn.op.softmax``."""
    op = "qnn.softmax"
    dtype = static_dtype(x)
    check_scale_const(scale, "scale", op)
    check_scale_const(output_scale, "output_scale", op)
    check_zero_point_const(zero_point, dtype, "zero_point", op)
    check_zero_point_const(output_zero_point, dtype, "output_zero_point", op)
    return make_call(op, [x, scale, zero_point, output_scale, output_zero_point], axis=int(axis))
