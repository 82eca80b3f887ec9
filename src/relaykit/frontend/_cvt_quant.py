"""ONNX converters: linear quantisation (``QuantizeLinear``, ``DequantizeLinear``,
``DynamicQuantizeLinear``) for 8/16-bit integers, and the signal windows
(``HannWindow``, ``HammingWindow``, ``BlackmanWindow``), ``CenterCropPad`` and
``AffineGrid``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import op
from ..ir.expr import Constant, Expr
from ._cvt_math import _round
from ._cvt_util import normalize_axis, scalar
from ._onnx_proto import onnx_dtype_name
from ._onnx_registry import NodeContext, converter

__all__: list[str] = []


def _along(ctx: NodeContext, v: Expr, ndim: int, axis: int) -> Expr:
    """A per-axis (1-D) parameter shaped to broadcast along ``axis``; scalars as they are."""
    shape = ctx.shape(v)
    if len(shape) == 0 or ndim == 0:
        return v
    if len(shape) == 1:
        axis = normalize_axis(ctx, axis, ndim)
        return op.reshape(v, tuple(shape[0] if i == axis else 1 for i in range(ndim)))
    return v  # blocked quantisation is not handled here


def _saturate(ctx: NodeContext, x: Expr, dtype: str) -> Expr:
    info = np.iinfo(dtype)
    return op.cast(op.clip(x, float(info.min), float(info.max)), dtype)


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
    if block_size:
        raise ctx.unsupported("blocked quantisation")
    nd = ctx.ndim(x)
    if zero_point is not None:
        out_dt = ctx.dtype(zero_point)
    elif output_dtype:
        out_dt = onnx_dtype_name(output_dtype, ctx.where)
    else:
        out_dt = "uint8"
    dt = ctx.dtype(scale)
    xf = x if ctx.dtype(x) == dt else op.cast(x, dt)
    y = _round(ctx, op.divide(xf, _along(ctx, scale, nd, axis)))
    if zero_point is not None:
        y = op.add(y, op.cast(_along(ctx, zero_point, nd, axis), dt))
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
    if block_size:
        raise ctx.unsupported("blocked quantisation")
    nd = ctx.ndim(x)
    dt = ctx.dtype(scale)
    xf = op.cast(x, dt)
    if zero_point is not None:
        xf = op.subtract(xf, op.cast(_along(ctx, zero_point, nd, axis), dt))
    return op.multiply(xf, _along(ctx, scale, nd, axis))


@converter("DynamicQuantizeLinear", 11)
def _dynamic_quantize(ctx: NodeContext, x: Expr) -> list[Expr]:
    dt = ctx.dtype(x)
    zero = scalar(0, dt)
    hi = op.maximum(op.max(x), zero)
    lo = op.minimum(op.min(x), zero)
    scale = op.divide(op.subtract(hi, lo), scalar(255, dt))
    zp = _saturate(ctx, _round(ctx, op.subtract(zero, op.divide(lo, scale))), "uint8")
    y = op.add(_round(ctx, op.divide(x, scale)), op.cast(zp, dt))
    return [_saturate(ctx, y, "uint8"), scale, zp]


def _window(ctx: NodeContext, size: Expr, periodic: int, dtype: int, coeffs: list[float]):
    n = int(ctx.scalar(size, "size"))
    denom = n if periodic else n - 1
    k = np.arange(n, dtype=np.float64)
    w = np.zeros(n)
    for j, a in enumerate(coeffs):
        w = w + ((-1) ** j) * a * np.cos(2 * np.pi * j * k / max(denom, 1))
    return Constant(w.astype(onnx_dtype_name(dtype, ctx.where)))


@converter("HannWindow", 17)
def _hann(ctx: NodeContext, size: Expr, *, output_datatype: int = 1, periodic: int = 1):
    return _window(ctx, size, periodic, output_datatype, [0.5, 0.5])


@converter("HammingWindow", 17)
def _hamming(ctx: NodeContext, size: Expr, *, output_datatype: int = 1, periodic: int = 1):
    return _window(ctx, size, periodic, output_datatype, [25 / 46, 21 / 46])


@converter("BlackmanWindow", 17)
def _blackman(ctx: NodeContext, size: Expr, *, output_datatype: int = 1, periodic: int = 1):
    return _window(ctx, size, periodic, output_datatype, [0.42, 0.5, 0.08])


@converter("CenterCropPad", 18)
def _center_crop_pad(ctx: NodeContext, x: Expr, shape: Expr, *, axes: Any = None) -> Expr:
    dims = ctx.shape(x)
    target = ctx.ints(shape, "shape")
    nd = len(dims)
    axes = list(range(nd)) if not axes else [normalize_axis(ctx, int(a), nd) for a in axes]
    out = x
    width = [(0, 0)] * nd
    for a, t in zip(axes, target, strict=True):
        d = dims[a]
        if t < d:
            start = (d - t) // 2
            out = op.strided_slice(out, [start], [start + t], axes=[a])
        elif t > d:
            before = (t - d) // 2
            width[a] = (before, t - d - before)
    if any(w != (0, 0) for w in width):
        out = op.nn.pad(out, width, scalar(0, ctx.dtype(x)))
    return out


@converter("AffineGrid", 20)
def _affine_grid(ctx: NodeContext, theta: Expr, size: Expr, *, align_corners: int = 0) -> Expr:
    dims = ctx.ints(size, "size")
    n, spatial = dims[0], dims[2:]
    axes = []
    for d in spatial:
        if align_corners:
            axes.append(np.linspace(-1.0, 1.0, d) if d > 1 else np.zeros(1))
        else:
            axes.append((2 * np.arange(d) + 1) / d - 1)
    mesh = np.meshgrid(*axes, indexing="ij")  # per spatial axis, in (D,) H, W order
    coords = [m.reshape(-1) for m in reversed(mesh)]  # x first, as the grid stores it
    base = np.stack([*coords, np.ones_like(coords[0])], axis=1)  # (P, r + 1)
    dt = ctx.dtype(theta)
    points = base.shape[0]
    base_c = Constant(np.broadcast_to(base.astype(dt), (n, points, base.shape[1])).copy())
    grid = op.nn.batch_matmul(base_c, theta, transpose_b=True)  # (N, P, r)
    return op.reshape(grid, (n, *spatial, len(spatial)))
