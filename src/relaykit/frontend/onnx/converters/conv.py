"""ONNX converters: convolutions and pooling (1-D runs as 2-D with a unit height)."""

from __future__ import annotations

import math
from typing import Any

from relaykit import op
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Expr

from .common import resolve_pads, scalar

__all__: list[str] = []


def _as_2d(ctx: NodeContext, x: Expr, what: str) -> tuple[Expr, bool]:
    """``x`` with a unit height inserted when it is 1-D spatial; 3-D is not supported."""
    shape = ctx.shape(x)
    if len(shape) == 3:
        return op.reshape(x, (shape[0], shape[1], 1, shape[2])), True
    if len(shape) == 4:
        return x, False
    raise ctx.unsupported(f"{len(shape) - 2}-D {what}")


def _check_window(ctx: NodeContext, nsp: int, **values: tuple[int, ...]) -> None:
    """Each of kernel_shape, strides, dilations has one positive value per spatial axis."""
    for name, vals in values.items():
        if len(vals) != nsp:
            raise ctx.fail(f"{name} {vals} does not match the {nsp} spatial axes")
        if any(int(v) <= 0 for v in vals):
            raise ctx.fail(f"{name} {vals} must be positive")


def _pair_2d(values: Any, one_d: bool, fill: int) -> tuple[int, int]:
    vals = tuple(int(v) for v in values)
    return (fill, vals[0]) if one_d else (vals[0], vals[1])


def _pads_2d(pads: tuple[int, ...], one_d: bool) -> tuple[int, int, int, int]:
    if one_d:
        return (0, pads[0], 0, pads[1])
    return (pads[0], pads[1], pads[2], pads[3])


def _back(ctx: NodeContext, out: Expr, one_d: bool) -> Expr:
    if not one_d:
        return out
    n, c, _, w = ctx.shape(out)
    return op.reshape(out, (n, c, w))


@converter("Conv", 1)
def _conv(
    ctx: NodeContext,
    x: Expr,
    w: Expr,
    b: Expr | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: Any = None,
    group: int = 1,
    kernel_shape: Any = None,
    pads: Any = None,
    strides: Any = None,
) -> Expr:
    spatial = ctx.shape(x)[2:]
    nsp = len(spatial)
    kernel = tuple(kernel_shape or ctx.shape(w)[2:])
    strides = tuple(strides or (1,) * nsp)
    dilations = tuple(dilations or (1,) * nsp)
    _check_window(ctx, nsp, kernel_shape=kernel, strides=strides, dilations=dilations)
    full_pads = resolve_pads(auto_pad, spatial, kernel, strides, dilations, pads or ())
    x2, one_d = _as_2d(ctx, x, "convolution")
    w2 = w
    if one_d:
        ws = ctx.shape(w)
        w2 = op.reshape(w, (ws[0], ws[1], 1, ws[2]))
    out = op.nn.conv2d(
        x2,
        w2,
        strides=_pair_2d(strides, one_d, 1),
        padding=_pads_2d(full_pads, one_d),
        dilation=_pair_2d(dilations, one_d, 1),
        groups=group,
        channels=ctx.shape(w)[0],
        kernel_size=_pair_2d(kernel, one_d, 1),
    )
    if b is not None:
        out = op.nn.bias_add(out, b, axis=1)
    return _back(ctx, out, one_d)


@converter("ConvTranspose", 1)
def _conv_transpose(
    ctx: NodeContext,
    x: Expr,
    w: Expr,
    b: Expr | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: Any = None,
    group: int = 1,
    kernel_shape: Any = None,
    output_padding: Any = None,
    output_shape: Any = None,
    pads: Any = None,
    strides: Any = None,
) -> Expr:
    spatial = ctx.shape(x)[2:]
    nsp = len(spatial)
    kernel = tuple(kernel_shape or ctx.shape(w)[2:])
    strides = tuple(strides or (1,) * nsp)
    dilations = tuple(dilations or (1,) * nsp)
    _check_window(ctx, nsp, kernel_shape=kernel, strides=strides, dilations=dilations)
    out_pad = list(output_padding or (0,) * nsp)
    if output_shape or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = list(output_shape or [s * st for s, st in zip(spatial, strides, strict=True)])
        target = target[-nsp:]
        begins, ends = [], []
        for i in range(nsp):
            total = (
                strides[i] * (spatial[i] - 1)
                + out_pad[i]
                + ((kernel[i] - 1) * dilations[i] + 1)
                - target[i]
            )
            if total < 0:  # the requested shape is larger: grow with output padding
                out_pad[i] += -total
                total = 0
            if auto_pad == "SAME_UPPER":
                begins.append(total // 2)
                ends.append(total - total // 2)
            else:
                begins.append(total - total // 2)
                ends.append(total // 2)
        full_pads = tuple(begins + ends)
    else:
        full_pads = tuple(pads or (0,) * (2 * nsp))
    x2, one_d = _as_2d(ctx, x, "transposed convolution")
    w2 = w
    if one_d:
        ws = ctx.shape(w)
        w2 = op.reshape(w, (ws[0], ws[1], 1, ws[2]))
    out = op.nn.conv2d_transpose(
        x2,
        w2,
        strides=_pair_2d(strides, one_d, 1),
        padding=_pads_2d(full_pads, one_d),
        dilation=_pair_2d(dilations, one_d, 1),
        groups=group,
        channels=ctx.shape(w)[1] * group,
        kernel_size=_pair_2d(kernel, one_d, 1),
        output_padding=_pair_2d(out_pad, one_d, 0),
    )
    if b is not None:
        out = op.nn.bias_add(out, b, axis=1)
    return _back(ctx, out, one_d)


def _onnx_pool_size(size: int, k: int, s: int, d: int, lo: int, hi: int, ceil: bool) -> int:
    span = (size + lo + hi - d * (k - 1) - 1) / s + 1
    if not ceil:
        return math.floor(span)
    out = math.ceil(span)
    if (out - 1) * s >= size + lo:
        out -= 1
    return out


def _pool(ctx: NodeContext, x: Expr, kind: str, attrs: dict[str, Any]) -> Expr:
    spatial = ctx.shape(x)[2:]
    nsp = len(spatial)
    kernel = tuple(attrs["kernel_shape"] or ())
    if len(kernel) != nsp:
        raise ctx.fail(f"kernel_shape {kernel} does not match the {nsp} spatial axes")
    strides = tuple(attrs.get("strides") or (1,) * nsp)
    dilations = tuple(attrs.get("dilations") or (1,) * nsp)
    _check_window(ctx, nsp, kernel_shape=kernel, strides=strides, dilations=dilations)
    ceil = bool(attrs.get("ceil_mode", 0))
    full_pads = resolve_pads(
        attrs.get("auto_pad", "NOTSET"),
        spatial,
        kernel,
        strides,
        dilations,
        attrs.get("pads") or (),
    )
    if nsp == 3:
        if kind == "max":
            return op.nn.max_pool3d(
                x,
                pool_size=kernel,
                strides=strides,
                dilation=dilations,
                padding=full_pads,
                ceil_mode=ceil,
            )
        return op.nn.avg_pool3d(
            x,
            pool_size=kernel,
            strides=strides,
            dilation=dilations,
            padding=full_pads,
            ceil_mode=ceil,
            count_include_pad=bool(attrs.get("count_include_pad", 0)),
        )
    x2, one_d = _as_2d(ctx, x, "pooling")
    pads = list(_pads_2d(full_pads, one_d))
    k2 = _pair_2d(kernel, one_d, 1)
    s2 = _pair_2d(strides, one_d, 1)
    d2 = _pair_2d(dilations, one_d, 1)
    h = ctx.shape(x2)[2:]
    use_ceil = False
    for i in range(2):
        lo, hi = pads[i], pads[i + 2]
        want = _onnx_pool_size(h[i], k2[i], s2[i], d2[i], lo, hi, ceil)
        floor = _onnx_pool_size(h[i], k2[i], s2[i], d2[i], lo, hi, False)
        if want != floor:
            use_ceil = True
    if kind == "max":
        out = op.nn.max_pool2d(
            x2, pool_size=k2, strides=s2, dilation=d2, padding=tuple(pads), ceil_mode=use_ceil
        )
    else:
        out = op.nn.avg_pool2d(
            x2,
            pool_size=k2,
            strides=s2,
            dilation=d2,
            padding=tuple(pads),
            ceil_mode=use_ceil,
            count_include_pad=bool(attrs.get("count_include_pad", 0)),
        )
    return _back(ctx, out, one_d)


@converter("MaxPool", 1)
def _max_pool(ctx: NodeContext, x: Expr, **attrs: Any) -> Any:
    if ctx.num_outputs > 1 and ctx.output_names[1]:
        return _max_pool_with_indices(ctx, x, attrs)
    return _pool(ctx, x, "max", attrs)


def _max_pool_with_indices(ctx: NodeContext, x: Expr, attrs: dict[str, Any]) -> list[Expr]:
    spatial = ctx.shape(x)[2:]
    if len(spatial) != 2:
        raise ctx.unsupported(f"the Indices output of a {len(spatial)}-D MaxPool")
    kernel = tuple(attrs["kernel_shape"] or ())
    strides = tuple(attrs.get("strides") or (1, 1))
    dilations = tuple(attrs.get("dilations") or (1, 1))
    _check_window(ctx, 2, kernel_shape=kernel, strides=strides, dilations=dilations)
    pads = resolve_pads(
        attrs.get("auto_pad", "NOTSET"),
        spatial,
        kernel,
        strides,
        dilations,
        attrs.get("pads") or (),
    )
    ceil = bool(attrs.get("ceil_mode", 0))
    use_ceil = any(
        _onnx_pool_size(spatial[i], kernel[i], strides[i], dilations[i], pads[i], pads[i + 2], ceil)
        != _onnx_pool_size(
            spatial[i], kernel[i], strides[i], dilations[i], pads[i], pads[i + 2], False
        )
        for i in range(2)
    )
    out = op.nn.max_pool2d_with_argmax(
        x,
        pool_size=kernel,
        strides=strides,
        dilation=dilations,
        padding=tuple(pads),
        ceil_mode=use_ceil,
        storage_order=int(attrs.get("storage_order", 0)),
    )
    return [out[0], out[1]]


@converter("AveragePool", 1)
def _avg_pool(ctx: NodeContext, x: Expr, **attrs: Any) -> Expr:
    return _pool(ctx, x, "avg", attrs)


@converter("LpPool", 1)
def _lp_pool(ctx: NodeContext, x: Expr, **attrs: Any) -> Expr:
    p = float(attrs.get("p", 2))
    dt = ctx.dtype(x)
    powered = op.power(op.abs(x), scalar(p, dt))
    pooled = _pool(ctx, powered, "avg", {**attrs, "count_include_pad": 1})
    area = math.prod(attrs.get("kernel_shape") or (1,))
    summed = op.multiply(pooled, scalar(area, dt))
    return op.power(summed, scalar(1.0 / p, dt))


@converter("GlobalAveragePool", 1)
def _global_avg_pool(ctx: NodeContext, x: Expr) -> Expr:
    if ctx.ndim(x) == 4:
        return op.nn.global_avg_pool2d(x)
    return op.mean(x, tuple(range(2, ctx.ndim(x))), keepdims=True)


@converter("GlobalMaxPool", 1)
def _global_max_pool(ctx: NodeContext, x: Expr) -> Expr:
    if ctx.ndim(x) == 4:
        return op.nn.global_max_pool2d(x)
    return op.max(x, tuple(range(2, ctx.ndim(x))), keepdims=True)


@converter("GlobalLpPool", 2)
def _global_lp_pool(ctx: NodeContext, x: Expr, *, p: int = 2) -> Expr:
    dt = ctx.dtype(x)
    axes = tuple(range(2, ctx.ndim(x)))
    s = op.sum(op.power(op.abs(x), scalar(p, dt)), axes, keepdims=True)
    return op.power(s, scalar(1.0 / p, dt))
