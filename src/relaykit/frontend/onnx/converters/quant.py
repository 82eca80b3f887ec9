"""ONNX converters: linear quantisation (``QuantizeLinear``, ``DequantizeLinear``,
``DynamicQuantizeLinear``) to and from 2/4/8/16-bit integers and the float8/float4
formats, per tensor, per axis or blocked."""

from __future__ import annotations

from typing import Any

from relaykit import op
from relaykit.frontend.onnx.narrow import cast_to, int_range
from relaykit.frontend.onnx.proto import onnx_dtype_name
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Expr
from relaykit.ir.types import dtype_kind

from .common import normalize_axis, round_half_to_even, scalar
from .conv import _conv
from .nn import matmul

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
    zp = _saturate(ctx, round_half_to_even(ctx, op.subtract(zero, op.divide(lo, scale))), "uint8")
    y = op.add(round_half_to_even(ctx, op.divide(x, scale)), op.cast(zp, dt))
    return [_saturate(ctx, y, "uint8"), scale, zp]


# -- integer arithmetic ---------------------------------------------------------------------------


def _centered(ctx: NodeContext, x: Expr, zp: Expr | None, row_axis: int | None = None) -> Expr:
    """``x - zero_point`` in int32 (a 1-D zero point applies along ``row_axis``)."""
    xi = op.cast(x, "int32")
    if zp is None:
        return xi
    z: Expr = op.cast(zp, "int32")
    if row_axis is not None and ctx.ndim(zp) == 1 and ctx.ndim(x) >= 2:
        z = _along(ctx, z, ctx.ndim(x), row_axis)
    return op.subtract(xi, z)


def _requantize(ctx: NodeContext, acc: Expr, scale: Expr, y_scale: Expr, y_zp: Expr | None):
    dt = ctx.dtype(y_scale)
    real = op.multiply(op.cast(acc, dt), scale)
    y = round_half_to_even(ctx, op.divide(real, y_scale))
    out_dt = ctx.dtype(y_zp) if y_zp is not None else "uint8"
    if y_zp is not None:
        y = op.add(y, op.cast(y_zp, dt))
    return _saturate(ctx, y, out_dt)


@converter("MatMulInteger", 10)
def _matmul_integer(
    ctx: NodeContext, a: Expr, b: Expr, a_zp: Expr | None = None, b_zp: Expr | None = None
) -> Expr:
    return matmul(ctx, _centered(ctx, a, a_zp, ctx.ndim(a) - 2), _centered(ctx, b, b_zp))


@converter("QLinearMatMul", 10)
def _qlinear_matmul(
    ctx: NodeContext,
    a: Expr,
    a_scale: Expr,
    a_zp: Expr,
    b: Expr,
    b_scale: Expr,
    b_zp: Expr,
    y_scale: Expr,
    y_zp: Expr,
) -> Expr:
    acc = matmul(ctx, _centered(ctx, a, a_zp, ctx.ndim(a) - 2), _centered(ctx, b, b_zp))
    sa = a_scale
    if ctx.ndim(a_scale) == 1 and ctx.ndim(a) >= 2:
        sa = _along(ctx, a_scale, ctx.ndim(a), ctx.ndim(a) - 2)
    return _requantize(ctx, acc, op.multiply(sa, b_scale), y_scale, y_zp)


def _int_conv(ctx: NodeContext, x: Expr, w: Expr, x_zp: Expr | None, w_zp, attrs: dict) -> Expr:
    xi = _centered(ctx, x, x_zp)
    wi = op.cast(w, "int32")
    if w_zp is not None:
        wz: Expr = op.cast(w_zp, "int32")
        if ctx.ndim(w_zp) == 1:
            wz = _along(ctx, wz, ctx.ndim(w), 0)
        wi = op.subtract(wi, wz)
    return _conv(ctx, xi, wi, None, **attrs)


@converter("ConvInteger", 10)
def _conv_integer(
    ctx: NodeContext,
    x: Expr,
    w: Expr,
    x_zp: Expr | None = None,
    w_zp: Expr | None = None,
    **attrs: Any,
) -> Expr:
    return _int_conv(ctx, x, w, x_zp, w_zp, attrs)


@converter("QLinearConv", 10)
def _qlinear_conv(
    ctx: NodeContext,
    x: Expr,
    x_scale: Expr,
    x_zp: Expr,
    w: Expr,
    w_scale: Expr,
    w_zp: Expr,
    y_scale: Expr,
    y_zp: Expr,
    bias: Expr | None = None,
    **attrs: Any,
) -> Expr:
    acc = _int_conv(ctx, x, w, x_zp, w_zp, attrs)
    if bias is not None:
        acc = op.nn.bias_add(acc, op.cast(bias, "int32"), axis=1)
    ws = w_scale
    if ctx.ndim(w_scale) == 1:
        ws = _along(ctx, w_scale, ctx.ndim(x), 1)
    return _requantize(ctx, acc, op.multiply(x_scale, ws), y_scale, y_zp)
