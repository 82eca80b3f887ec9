"""Arithmetic on the narrow element types: bfloat16, the float8 and float4 formats,
int4/uint4/int2/uint2 (relaykit holds them when ``ml_dtypes`` is installed).

relaykit's operators compute in the standard NumPy types; tensors of a narrow type
are moved, cast, quantised and dequantised as they are. For any other ONNX node the
importer widens narrow inputs (bfloat16 and float8 to float32, int4/int2 to int8,
uint4/uint2 to uint8; exact), converts the node, and rounds each output whose ONNX
type is the type of a narrow input back to that type. This is what ONNX's reference
evaluator and most runtimes do for these types: compute wide, round per node.

>>> widened_dtype("bfloat16"), widened_dtype("uint4"), widened_dtype("float32")
('float32', 'uint8', None)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.errors import FrontendError
from relaykit.ir.expr import Constant, Expr
from relaykit.ir.types import DTYPES, ML_DTYPES, TensorType, dtype_kind

from .registry import NodeContext, _domain, _schema

__all__ = ["NATIVE_OPS", "widened_dtype", "widen_inputs", "narrow_outputs", "cast_to", "int_range"]

#: Ops converted on narrow tensors as they are (casts, quantisation, pure data movement).
NATIVE_OPS = frozenset(
    {
        "Cast",
        "CastLike",
        "BitCast",
        "QuantizeLinear",
        "DequantizeLinear",
        "Identity",
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Transpose",
        "Shape",
        "Size",
    }
)


def widened_dtype(dtype: str) -> str | None:
    """The standard dtype a narrow dtype is computed in, or None for a standard dtype."""
    if dtype not in ML_DTYPES:
        return None
    kind = dtype_kind(dtype)
    return {"f": "float32", "i": "int8", "u": "uint8"}[kind]


def widen_inputs(ctx: NodeContext, inputs: list[Any]) -> tuple[list[Any], dict[int, str]]:
    """``inputs`` with narrow tensors cast to their wide dtype, and ``{index: narrow
    dtype}`` of the inputs that were widened (empty when the node needs nothing)."""
    if ctx.op_type in NATIVE_OPS:
        return inputs, {}
    narrow: dict[int, str] = {}
    out = list(inputs)
    for i, x in enumerate(inputs):
        if not isinstance(x, Expr) or not isinstance(ctx.importer.type_of(x, ctx), TensorType):
            continue  # a sequence (tuple): its elements were narrowed where they were made
        dtype = ctx.dtype(x)
        wide = widened_dtype(dtype)
        if wide is not None:
            narrow[i] = dtype
            if isinstance(x, Constant):  # keeps values known at import known
                out[i] = Constant(x.data.numpy().astype(wide))
            else:
                out[i] = op.cast(x, wide)
    return out, narrow


def _formal(params: Any, i: int) -> str | None:
    if not params:
        return None
    p = params[min(i, len(params) - 1)]
    if i >= len(params) and int(p.option) != 2:  # only a variadic last formal repeats
        return None
    return p.type_str


def narrow_outputs(ctx: NodeContext, outs: list[Any], narrow: dict[int, str]) -> list[Any]:
    """Round the outputs whose ONNX type is that of a widened input back to it."""
    schema = _schema(_domain(ctx.node.domain), ctx.op_type, ctx.opset)
    if schema is None:
        return outs
    type_of_input: dict[str, str] = {}
    for i, dtype in narrow.items():
        ts = _formal(schema.inputs, i)
        if ts is not None:
            type_of_input.setdefault(ts, dtype)
    result = list(outs)
    for k, y in enumerate(outs):
        if not isinstance(y, Expr):
            continue
        target = type_of_input.get(_formal(schema.outputs, k) or "")
        if target is not None and ctx.dtype(y) == widened_dtype(target):
            result[k] = op.cast(y, target)
    return result


# -- casts to the float8 formats ------------------------------------------------------------

_SATURATING = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")


def cast_to(ctx: NodeContext, x: Expr, dtype: str, saturate: int = 1, round_mode: str = "") -> Expr:
    """ONNX ``Cast`` of ``x`` to ``dtype``: with ``saturate`` (the default) a value out of
    a float8 format's range (infinities included) becomes its largest finite value; a
    cast to float8_e8m0fnu keeps the exponent, rounded as ``round_mode`` says."""
    if dtype == "float8_e8m0fnu":
        return _to_e8m0(x, bool(saturate), round_mode or "up")
    if dtype in _SATURATING and saturate and dtype_kind(ctx.dtype(x)) == "f":
        import ml_dtypes

        hi = float(ml_dtypes.finfo(DTYPES[dtype]).max)
        x = op.clip(x, -hi, hi)
    return op.cast(x, dtype)


def _u32(value: int) -> Constant:
    return Constant(np.array(value, "uint32"))


def _to_e8m0(x: Expr, saturate: bool, round_mode: str) -> Expr:
    """float8_e8m0fnu holds the biased exponent of a float32: ``2 ** (e - 127)``; NaN and
    infinities become its NaN (0xFF)."""
    bits = op.reinterpret(op.cast(x, "float32"), "uint32")
    exponent = op.bitwise_and(op.right_shift(bits, _u32(23)), _u32(0xFF))
    special = op.equal(exponent, _u32(0xFF))
    if round_mode == "up":
        round_up = op.not_equal(op.bitwise_and(bits, _u32(0x7FFFFF)), _u32(0))
    elif round_mode == "nearest":
        guard = op.not_equal(op.bitwise_and(bits, _u32(0x400000)), _u32(0))
        rest = op.not_equal(op.bitwise_and(bits, _u32(0x3FFFFF)), _u32(0))
        odd = op.greater(exponent, _u32(0))  # as in ONNX's reference (numpy_helper)
        round_up = op.logical_and(guard, op.logical_or(rest, odd))
    elif round_mode == "down":
        round_up = None
    else:
        raise FrontendError(f"Cast: round_mode must be up, down or nearest, got {round_mode!r}")
    if round_up is not None:
        round_up = op.logical_and(round_up, op.logical_not(special))
        if saturate:
            at_max = op.equal(exponent, _u32(0xFE))
            round_up = op.logical_and(round_up, op.logical_not(at_max))
        exponent = op.add(exponent, op.cast(round_up, "uint32"))
    exponent = op.where(special, _u32(0xFF), exponent)
    return op.reinterpret(op.cast(exponent, "uint8"), "float8_e8m0fnu")


def int_range(dtype: str) -> tuple[int, int]:
    """The smallest and largest value of an integer dtype, narrow ones included."""
    if dtype in ML_DTYPES:
        import ml_dtypes

        ml_info = ml_dtypes.iinfo(DTYPES[dtype])
        return int(ml_info.min), int(ml_info.max)
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)
