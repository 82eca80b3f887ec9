"""ONNX converters: linear quantisation (``QuantizeLinear``, ``DequantizeLinear``,
``DynamicQuantizeLinear``).

With constant float32 scales and zero points and an int8/uint8/int16/uint16/int32
tensor, per tensor or per axis, they become ``qnn.quantize`` / ``qnn.dequantize`` (as
TVM's frontend imports them), which later passes fold into QNN operators. Everything else
ONNX allows -- scales computed at run time or of float16, blocked quantisation, 2/4-bit
integers and the float8/float4 formats -- is computed exactly in float arithmetic.
Constant parameters are checked first: a bad scale or zero point is an error naming the
node (:mod:`.quant_params`)."""

from __future__ import annotations

import math

from relaykit import op
from relaykit.frontend.onnx.narrow import cast_to, int_range
from relaykit.frontend.onnx.proto import onnx_dtype_name
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr
from relaykit.ir.types import dtype_kind

from .common import normalize_axis, round_half_to_even, scalar
from .quant_params import QNN_DTYPES, check_scale_values, const_qparams, is_const

#: ONNX rounds quantized values to nearest, halves to even (QuantizeLinear, onnxruntime).
EVEN = "TONEAREST_EVEN"

__all__: list[str] = []


def _along(ctx: NodeContext, v: Expr, ndim: int, axis: int, block: int = 0, dim: int = 0) -> Expr:
    """A per-axis (1-D) parameter shaped to broadcast along ``axis``; scalars as they are;
    a blocked parameter (one value per ``block`` elements of ``axis``) repeated out."""
    shape = ctx.shape(v)
    if block:
        axis = normalize_axis(ctx, axis, ndim)
        full = op.repeat(v, block, axis)
        return op.strided_slice(full, [0], [dim], axes=[axis])
    if len(shape) == 0 or ndim == 0 or tuple(shape) == (1,):
        return v
    if len(shape) == 1:
        axis = normalize_axis(ctx, axis, ndim)
        return op.reshape(v, tuple(shape[0] if i == axis else 1 for i in range(ndim)))
    return v  # blocked quantisation is not handled here


def _qnn_ok(
    ctx: NodeContext, x: Expr, scale: Expr, zp: Expr | None, qdtype: str, block_size: int
) -> bool:
    """Whether a QuantizeLinear / DequantizeLinear maps to a QNN operator: constant
    float32 parameters, an integer dtype QNN has, float32 data, no blocks."""
    fdt = ctx.dtype(x) if dtype_kind(ctx.dtype(x)) == "f" else ctx.dtype(scale)
    return (
        not block_size
        and qdtype in QNN_DTYPES
        and fdt == "float32"
        and ctx.dtype(scale) == "float32"
        and is_const(scale, zp)
    )


def _qnn_axis(ctx: NodeContext, x: Expr, scale: Expr, axis: int) -> tuple[int, int | None]:
    """The QNN ``axis`` and its number of channels; ONNX ignores ``axis`` for a per-tensor
    (one-value) scale."""
    nd = ctx.ndim(x)
    if nd == 0 or math.prod(ctx.shape(scale)) == 1:
        return -1, None
    ax = normalize_axis(ctx, axis, nd)
    return ax, ctx.shape(x)[ax]


def _check_const_scale(ctx: NodeContext, scale: Expr, what: str) -> None:
    if isinstance(scale, Constant):
        check_scale_values(scale.data.numpy(), f"the {what} scale", ctx.where)


def _saturate(ctx: NodeContext, x: Expr, dtype: str) -> Expr:
    lo, hi = int_range(dtype)
    return op.cast(op.clip(x, float(lo), float(hi)), dtype)


@converter("QuantizeLinear", 10)
def _quantize(
    ctx: NodeContext,
    x: Expr,
    scale: Expr,
    zero_point: Expr | None = None,
    *,
    axis: int = 1,
    block_size: int = 0,
    saturate: int = 1,
    output_dtype: int = 0,
    precision: int = 0,
) -> Expr:
    nd = ctx.ndim(x)
    dim = ctx.shape(x)[normalize_axis(ctx, axis, nd)] if block_size else 0
    if zero_point is not None:
        out_dt = ctx.dtype(zero_point)
    elif output_dtype:
        out_dt = onnx_dtype_name(output_dtype, ctx.where)
    else:
        out_dt = "uint8"
    dt = ctx.dtype(scale)
    _check_const_scale(ctx, scale, "y")
    if _qnn_ok(ctx, x, scale, zero_point, out_dt, block_size):
        ax, channels = _qnn_axis(ctx, x, scale, axis)
        qp = const_qparams(ctx, scale, zero_point, out_dt, "y", channels)
        return op.qnn.quantize(x, qp.scale, qp.zero_point, axis=ax, out_dtype=out_dt, rounding=EVEN)
    xf = x if ctx.dtype(x) == dt else op.cast(x, dt)
    y: Expr = op.divide(xf, _along(ctx, scale, nd, axis, block_size, dim))
    if out_dt.startswith("float8"):  # the zero point of a float8 type is always 0
        return cast_to(ctx, y, out_dt, saturate)
    if dtype_kind(out_dt) == "f":  # float4: no rounding to integers, the cast rounds
        if zero_point is not None:
            y = op.add(y, op.cast(_along(ctx, zero_point, nd, axis, block_size, dim), dt))
        return op.cast(y, out_dt)
    y = round_half_to_even(ctx, y)
    if zero_point is not None:
        y = op.add(y, op.cast(_along(ctx, zero_point, nd, axis, block_size, dim), dt))
    return _saturate(ctx, y, out_dt)


@converter("DequantizeLinear", 10)
def _dequantize(
    ctx: NodeContext,
    x: Expr,
    scale: Expr,
    zero_point: Expr | None = None,
    *,
    axis: int = 1,
    block_size: int = 0,
    output_dtype: int = 0,
) -> Expr:
    nd = ctx.ndim(x)
    dim = ctx.shape(x)[normalize_axis(ctx, axis, nd)] if block_size else 0
    dt = ctx.dtype(scale)
    out_name = onnx_dtype_name(output_dtype, ctx.where) if output_dtype else dt
    _check_const_scale(ctx, scale, "x")
    if out_name == "float32" and _qnn_ok(ctx, x, scale, zero_point, ctx.dtype(x), block_size):
        ax, channels = _qnn_axis(ctx, x, scale, axis)
        qp = const_qparams(ctx, scale, zero_point, ctx.dtype(x), "x", channels)
        return op.qnn.dequantize(x, qp.scale, qp.zero_point, axis=ax)
    xf = op.cast(x, dt)
    if zero_point is not None:
        zp = _along(ctx, zero_point, nd, axis, block_size, dim)
        xf = op.subtract(xf, op.cast(zp, dt))
    out = op.multiply(xf, _along(ctx, scale, nd, axis, block_size, dim))
    if output_dtype and onnx_dtype_name(output_dtype, ctx.where) != dt:
        out = op.cast(out, onnx_dtype_name(output_dtype, ctx.where))
    return out


@converter("DynamicQuantizeLinear", 11)
def _dynamic_quantize(ctx: NodeContext, x: Expr) -> list[Expr]:
    dt = ctx.dtype(x)
    zero = scalar(0, dt)
    hi = op.maximum(op.max(x), zero)
    lo = op.minimum(op.min(x), zero)
    scale = op.divide(op.subtract(hi, lo), scalar(255, dt))
    if dt != "float32":
        zp = _saturate(
            ctx, round_half_to_even(ctx, op.subtract(zero, op.divide(lo, scale))), "uint8"
        )
        y = op.add(round_half_to_even(ctx, op.divide(x, scale)), op.cast(zp, dt))
        return [_saturate(ctx, y, "uint8"), scale, zp]
    # float32: the tensor is quantized by qnn.quantize with the computed parameters (an
    # all-zero input, whose range is empty, is quantized with scale 1 to all zeros)
    safe = op.where(op.equal(scale, zero), scalar(1, dt), scale)
    zp = _saturate(ctx, round_half_to_even(ctx, op.subtract(zero, op.divide(lo, safe))), "uint8")
    y = op.qnn.quantize(x, safe, op.cast(zp, "int32"), out_dtype="uint8", rounding=EVEN)
    return [y, scale, zp]
