"""Rules of the operators with a weight: ``nn.conv2d``, ``nn.conv2d_transpose``,
``nn.dense``, ``nn.batch_matmul`` (their QNN twins, an int32 result with scale
``input_scale * kernel_scale``) and ``nn.bias_add`` (the bias brought to that scale)."""

from __future__ import annotations

from typing import Any

from relaykit.errors import IRError
from relaykit.ir.affine_type import TensorAffineType
from relaykit.ir.expr import Call, Constant, Expr
from relaykit.op.define import make_call
from relaykit.op.qnn import quantize, requantize

from .registry import (
    fold,
    get_zeros,
    op_name,
    register_fake_quantization_to_integer,
    same_affine,
)

__all__ = ["core_rule", "bias_add_rule"]

_QNN_TWIN = {
    "nn.conv2d": "qnn.conv2d",
    "nn.conv2d_transpose": "qnn.conv2d_transpose",
    "nn.dense": "qnn.dense",
    "nn.batch_matmul": "qnn.batch_matmul",
}


def _out_axis(expr: Call) -> int:
    name = op_name(expr)
    if name in ("nn.conv2d", "nn.conv2d_transpose"):
        layout = str(expr.attrs.out_layout or expr.attrs.data_layout)
        return layout.index("C")
    return -1


def core_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``op(dequantize(x), dequantize(w))`` -> ``qnn.op(x, w, ...)`` in int32."""
    x, w = expr.args
    x_t: TensorAffineType = type_map[x]
    w_t: TensorAffineType = type_map[w]
    given = {k: expr.attrs[k] for k in expr.attrs if k != "out_dtype"}
    out = make_call(
        _QNN_TWIN[op_name(expr)],
        [x, w, x_t.zero_point, w_t.zero_point, x_t.scale, w_t.scale],
        out_dtype="int32",
        **given,
    )
    scale = fold(x_t.scale * w_t.scale)
    axis = x_t.axis if op_name(expr) == "nn.batch_matmul" else _out_axis(expr)
    return [out, TensorAffineType(scale, get_zeros(scale), "int32", axis)]


for _name in _QNN_TWIN:
    register_fake_quantization_to_integer(_name, core_rule)


@register_fake_quantization_to_integer("nn.bias_add")
def bias_add_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """The bias requantized (or, a float constant, quantized) to the input's parameters."""
    x, b = expr.args
    x_t: TensorAffineType = type_map[x]
    if b in type_map:
        b_t: TensorAffineType = type_map[b]
        if not same_affine(x_t, b_t):
            b = requantize(
                b,
                b_t.scale,
                b_t.zero_point,
                fold(x_t.scale),
                fold(x_t.zero_point),
                axis=0,
                out_dtype=x_t.dtype,
            )
    elif isinstance(b, Constant) and str(b.data.dtype).startswith(("float", "bfloat")):
        b = quantize(b, x_t.scale, x_t.zero_point, axis=0, out_dtype=x_t.dtype)
    else:
        raise IRError("nn.bias_add: the bias is neither quantized nor a float constant")
    return [make_call("nn.bias_add", [x, b], axis=int(expr.attrs.axis)), x_t]
