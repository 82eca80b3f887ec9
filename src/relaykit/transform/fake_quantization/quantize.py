"""The rules of ``qnn.quantize`` (the region's end: a requantize when the parameters
differ) and ``qnn.dequantize`` (a region's input: its integer argument)."""

from __future__ import annotations

from typing import Any

from relaykit.ir.affine_type import TensorAffineType
from relaykit.ir.expr import Call, Expr
from relaykit.op.qnn import requantize

from .registry import fold, register_fake_quantization_to_integer, same_affine

__all__ = ["quantize_rule", "dequantize_rule"]


@register_fake_quantization_to_integer("qnn.quantize")
def quantize_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """The integer input, requantized to the quantize's parameters when they differ."""
    arg = expr.args[0]
    t: TensorAffineType = type_map[arg]
    out_t = TensorAffineType(
        expr.args[1], expr.args[2], str(expr.attrs.out_dtype), int(expr.attrs.axis)
    )
    if same_affine(t, out_t):
        return [arg, out_t]
    out = requantize(
        arg,
        fold(t.scale),
        fold(t.zero_point),
        expr.args[1],
        expr.args[2],
        axis=t.axis,
        out_dtype=out_t.dtype,
    )
    return [out, out_t]


@register_fake_quantization_to_integer("qnn.dequantize")
def dequantize_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """The dequantize's integer input, with the dequantize's affine type."""
    return [expr.args[0], type_map[expr]]
