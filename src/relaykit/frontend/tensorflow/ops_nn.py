"""Converters of TensorFlow's image ops: convolutions, pooling, batch normalisation,
``BiasAdd``, ``LRN``, resizing and padding.

TensorFlow computes ``"SAME"`` padding from the input size (the odd pixel goes at the
end). With ``from_tensorflow(..., layout="NCHW")`` an NHWC convolution or pooling runs
in NCHW between two transposes (its weights converted to OIHW), as in TVM; the
graph's own layout is kept everywhere else.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.common import same_pads
from relaykit.ir.expr import Expr, const
from relaykit.op import image, nn

from .registry import NodeContext, converter

__all__: list[str] = []

_TO_NCHW, _TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


def _spatial(ctx: NodeContext, key: str, fmt: str, default: int = 1) -> list[int]:
    vals = ctx.attr(key) or [default] * 4
    return [int(vals[1]), int(vals[2])] if fmt == "NHWC" else [int(vals[2]), int(vals[3])]


def _padding(
    ctx: NodeContext,
    fmt: str,
    size: list[int],
    kernel: list[int],
    strides: list[int],
    dilation: list[int],
) -> list[int]:
    """``(top, left, bottom, right)``."""
    mode = ctx.attr("padding", "VALID")
    if mode == "VALID":
        return [0, 0, 0, 0]
    if mode == "SAME":  # the odd pixel at the end
        (top, bottom), (left, right) = (
            same_pads(*axis) for axis in zip(size, kernel, strides, dilation, strict=False)
        )
        return [top, left, bottom, right]
    if mode == "EXPLICIT":
        p = [int(v) for v in ctx.attr("explicit_paddings")]
        h, w = (1, 2) if fmt == "NHWC" else (2, 3)
        return [p[2 * h], p[2 * w], p[2 * h + 1], p[2 * w + 1]]
    raise ctx.fail(f"padding {mode!r} is not supported (VALID, SAME, EXPLICIT are)")


def _format(ctx: NodeContext) -> str:
    fmt = ctx.attr("data_format", "NHWC")
    if fmt not in ("NHWC", "NCHW"):
        raise ctx.fail(f"data_format {fmt!r} is not supported (NHWC and NCHW are)")
    return fmt


def _to_nchw(ctx: NodeContext, x: Expr, fmt: str) -> tuple[Expr, bool]:
    """``x`` in NCHW when the target layout asks for it (and whether it was flipped)."""
    if fmt == "NHWC" and ctx.layout == "NCHW":
        return op.transpose(x, _TO_NCHW), True
    return x, False


@converter("Conv2D", "DepthwiseConv2dNative")
def _conv2d(ctx: NodeContext) -> Expr:
    fmt = _format(ctx)
    x, w = ctx.inputs[0], ctx.inputs[1]
    xs, (kh, kw, cin, cmul) = ctx.shape(0), ctx.shape(1)
    size = [xs[1], xs[2]] if fmt == "NHWC" else [xs[2], xs[3]]
    channels_in = xs[3] if fmt == "NHWC" else xs[1]
    strides, dilation = _spatial(ctx, "strides", fmt), _spatial(ctx, "dilations", fmt)
    pad = _padding(ctx, fmt, size, [kh, kw], strides, dilation)
    depthwise = ctx.op == "DepthwiseConv2dNative"
    if depthwise:  # HW(C)(M) -> HW(C*M)1: output channel c*M + m, one group per channel
        w = op.reshape(w, [kh, kw, cin * cmul, 1])
        groups, channels = channels_in, cin * cmul
    else:
        groups, channels = channels_in // cin, cmul
    x, flipped = _to_nchw(ctx, x, fmt)
    layout = "NCHW" if flipped else fmt
    if layout == "NCHW":
        w = op.transpose(w, [3, 2, 0, 1] if not depthwise else [2, 3, 0, 1])
        kernel_layout = "OIHW"
    else:
        kernel_layout = "HWOI" if depthwise else "HWIO"
    out = nn.conv2d(
        x,
        w,
        strides=strides,
        padding=pad,
        dilation=dilation,
        groups=groups,
        channels=channels,
        kernel_size=[kh, kw],
        data_layout=layout,
        kernel_layout=kernel_layout,
    )
    return op.transpose(out, _TO_NHWC) if flipped else out


@converter("Conv2DBackpropInput")
def _conv2d_transpose(ctx: NodeContext) -> Expr:
    fmt = _format(ctx)
    out_size = ctx.ints(0, "input_sizes")
    w, x = ctx.inputs[1], ctx.inputs[2]
    kh, kw, cout, _ = ctx.shape(1)
    xs = ctx.shape(2)
    strides, dilation = _spatial(ctx, "strides", fmt), _spatial(ctx, "dilations", fmt)
    if fmt == "NHWC":
        x = op.transpose(x, _TO_NCHW)
        in_hw, out_hw = [xs[1], xs[2]], [out_size[1], out_size[2]]
    else:
        in_hw, out_hw = [xs[2], xs[3]], [out_size[2], out_size[3]]
    fwd = _padding(ctx, fmt, out_hw, [kh, kw], strides, dilation)
    pad, extra = [0, 0, 0, 0], [0, 0]
    for i, k in enumerate((kh, kw)):
        full = (in_hw[i] - 1) * strides[i] + (k - 1) * dilation[i] + 1
        before = fwd[i]
        after = max(full - before - out_hw[i], 0)
        pad[i], pad[i + 2] = before, after
        extra[i] = out_hw[i] - (full - before - after)
        if not 0 <= extra[i] < max(strides[i], dilation[i]):
            raise ctx.fail(f"input_sizes {out_size} do not fit the input {xs} and the kernel")
    out = nn.conv2d_transpose(
        x,
        op.transpose(w, [3, 2, 0, 1]),
        strides=strides,
        padding=pad,
        dilation=dilation,
        channels=cout,
        kernel_size=[kh, kw],
        data_layout="NCHW",
        kernel_layout="IOHW",
        output_padding=extra,
    )
    return op.transpose(out, _TO_NHWC) if fmt == "NHWC" else out


@converter("BiasAdd", "BiasAddV1")
def _bias_add(ctx: NodeContext) -> Expr:
    axis = 1 if ctx.attr("data_format", "NHWC") == "NCHW" else ctx.ndim(0) - 1
    return nn.bias_add(ctx.inputs[0], ctx.inputs[1], axis=axis)


@converter("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def _fused_batch_norm(ctx: NodeContext) -> list[Expr]:
    fmt = _format(ctx)
    x, scale, offset, mean, var = ctx.inputs[:5]
    axis = 3 if fmt == "NHWC" else 1
    eps = float(ctx.attr("epsilon", 1e-3))
    if ctx.attr("is_training", False):
        reduce = [a for a in range(4) if a != axis]
        mean = op.mean(x, axis=reduce)
        var = op.variance(x, axis=reduce)
    y = nn.batch_norm(x, scale, offset, mean, var, axis=axis, epsilon=eps)[0]
    outs = [y, mean, var, mean, var]
    return [*outs, var] if ctx.op == "FusedBatchNormV3" else outs


@converter("BatchNormWithGlobalNormalization")
def _global_batch_norm(ctx: NodeContext) -> Expr:
    x, mean, var, beta, gamma = ctx.inputs[:5]
    return nn.batch_norm(
        x,
        gamma,
        beta,
        mean,
        var,
        axis=ctx.ndim(0) - 1,
        epsilon=float(ctx.attr("variance_epsilon", 1e-3)),
        scale=bool(ctx.attr("scale_after_normalization", True)),
    )[0]


def _pool(ctx: NodeContext, kind: str) -> Expr:
    fmt = _format(ctx)
    xs = ctx.shape(0)
    size = [xs[1], xs[2]] if fmt == "NHWC" else [xs[2], xs[3]]
    kernel, strides = _spatial(ctx, "ksize", fmt), _spatial(ctx, "strides", fmt)
    pad = _padding(ctx, fmt, size, kernel, strides, [1, 1])
    x, flipped = _to_nchw(ctx, ctx.inputs[0], fmt)
    layout = "NCHW" if flipped else fmt
    if kind == "max":
        out = nn.max_pool2d(x, kernel, strides, padding=pad, layout=layout)
    else:
        out = nn.avg_pool2d(x, kernel, strides, padding=pad, layout=layout, count_include_pad=False)
    return op.transpose(out, _TO_NHWC) if flipped else out


@converter("MaxPool")
def _max_pool(ctx: NodeContext) -> Expr:
    return _pool(ctx, "max")


@converter("AvgPool")
def _avg_pool(ctx: NodeContext) -> Expr:
    return _pool(ctx, "avg")


@converter("LRN")
def _lrn(ctx: NodeContext) -> Expr:
    radius = int(ctx.attr("depth_radius", 5))
    size = 2 * radius + 1
    # relay's lrn divides alpha by the window size; TensorFlow's does not
    return nn.lrn(
        ctx.inputs[0],
        size=size,
        axis=ctx.ndim(0) - 1,
        bias=float(ctx.attr("bias", 1.0)),
        alpha=float(ctx.attr("alpha", 1.0)) * size,
        beta=float(ctx.attr("beta", 0.5)),
    )


def _resize(ctx: NodeContext, method: str) -> Expr:
    size = ctx.ints(1, "the output size")
    align, half = (
        bool(ctx.attr("align_corners", False)),
        bool(ctx.attr("half_pixel_centers", False)),
    )
    if align:
        mode, rounding = "align_corners", "round_prefer_ceil"
    elif half:  # nearest: floor((i + 0.5) * scale), i.e. half-pixel rounded up at .5
        mode, rounding = "half_pixel", "round_prefer_ceil"
    else:
        mode, rounding = "asymmetric", "floor"
    x = ctx.inputs[0]
    dtype = ctx.dtype(0)
    if method == "linear" and dtype != "float32":
        x = op.cast(x, "float32")  # TensorFlow's bilinear resize returns float32
    return image.resize2d(
        x,
        size,
        layout="NHWC",
        method=method,
        coordinate_transformation_mode=mode,
        rounding_method=rounding if method == "nearest_neighbor" else "",
    )


@converter("ResizeBilinear")
def _resize_bilinear(ctx: NodeContext) -> Expr:
    return _resize(ctx, "linear")


@converter("ResizeNearestNeighbor")
def _resize_nearest(ctx: NodeContext) -> Expr:
    return _resize(ctx, "nearest_neighbor")


# -- 3-d (NDHWC) ---------------------------------------------------------------------------
def _spatial3d(ctx: NodeContext, key: str) -> list[int]:
    if ctx.attr("data_format", "NDHWC") != "NDHWC":
        raise ctx.fail(f"data_format {ctx.attr('data_format')!r} is not supported (NDHWC is)")
    vals = ctx.attr(key) or [1] * 5
    return [int(v) for v in vals[1:4]]


def _pads3d(
    ctx: NodeContext, size: list[int], kernel: list[int], strides: list[int], dilation: list[int]
) -> list[int]:
    mode = ctx.attr("padding", "VALID")
    if mode == "SAME":
        pairs = [same_pads(*axis) for axis in zip(size, kernel, strides, dilation, strict=False)]
        return [p[0] for p in pairs] + [p[1] for p in pairs]
    if mode == "VALID":
        return [0] * 6
    raise ctx.fail(f"padding {mode!r} is not supported (VALID, SAME are)")


@converter("Conv3D")
def _conv3d(ctx: NodeContext) -> Expr:
    xs, ws = ctx.shape(0), ctx.shape(1)
    strides, dilation = _spatial3d(ctx, "strides"), _spatial3d(ctx, "dilations")
    pad = _pads3d(ctx, xs[1:4], ws[:3], strides, dilation)
    x = op.transpose(ctx.inputs[0], [0, 4, 1, 2, 3])
    w = op.transpose(ctx.inputs[1], [4, 3, 0, 1, 2])  # DHWIO -> OIDHW
    out = nn.conv3d(
        x,
        w,
        strides=strides,
        padding=pad,
        dilation=dilation,
        groups=xs[4] // ws[3],
        channels=ws[4],
        kernel_size=ws[:3],
    )
    return op.transpose(out, [0, 2, 3, 4, 1])


def _pool3d(ctx: NodeContext, fn: Any, **extra: Any) -> Expr:
    xs = ctx.shape(0)
    kernel, strides = _spatial3d(ctx, "ksize"), _spatial3d(ctx, "strides")
    pad = _pads3d(ctx, xs[1:4], kernel, strides, [1, 1, 1])
    return fn(ctx.inputs[0], kernel, strides, padding=pad, layout="NDHWC", **extra)


@converter("MaxPool3D")
def _max_pool3d(ctx: NodeContext) -> Expr:
    return _pool3d(ctx, nn.max_pool3d)


@converter("AvgPool3D")
def _avg_pool3d(ctx: NodeContext) -> Expr:
    return _pool3d(ctx, nn.avg_pool3d, count_include_pad=False)


# -- space and batch rearrangements ------------------------------------------------------
def _pairs(ctx: NodeContext, i: int, what: str) -> list[list[int]]:
    pairs = np.asarray(ctx.value(i, what)).reshape(-1, 2)
    return [[int(a), int(b)] for a, b in pairs]


@converter("SpaceToBatchND")
def _space_to_batch(ctx: NodeContext) -> Expr:
    block = ctx.ints(1, "the block shape")
    return nn.space_to_batch_nd(ctx.inputs[0], block, _pairs(ctx, 2, "the paddings"))


@converter("BatchToSpaceND")
def _batch_to_space(ctx: NodeContext) -> Expr:
    block = ctx.ints(1, "the block shape")
    return nn.batch_to_space_nd(ctx.inputs[0], block, _pairs(ctx, 2, "the crops"))


@converter("DepthToSpace")
def _depth_to_space(ctx: NodeContext) -> Expr:
    size = int(ctx.attr("block_size"))
    return nn.depth_to_space(ctx.inputs[0], size, layout=_format(ctx), mode="DCR")


@converter("SpaceToDepth")
def _space_to_depth(ctx: NodeContext) -> Expr:
    return nn.space_to_depth(ctx.inputs[0], int(ctx.attr("block_size")), layout=_format(ctx))


# -- padding -------------------------------------------------------------------------------
def _pad_widths(ctx: NodeContext) -> list[list[int]]:
    pads = np.asarray(ctx.value(1, "the paddings")).reshape(-1, 2)
    return [[int(a), int(b)] for a, b in pads]


@converter("Pad", "PadV2")
def _pad(ctx: NodeContext) -> Expr:
    value: Any = 0
    if ctx.op == "PadV2" and len(ctx.inputs) > 2:
        value = ctx.inputs[2]
    else:
        value = const(np.array(0, dtype=ctx.dtype(0)))
    return nn.pad(ctx.inputs[0], _pad_widths(ctx), pad_value=value)


@converter("MirrorPad")
def _mirror_pad(ctx: NodeContext) -> Expr:
    widths = _pad_widths(ctx)
    mode = ctx.attr("mode", "REFLECT")
    if mode == "REFLECT":
        return nn.pad(ctx.inputs[0], widths, pad_mode="reflect")
    if mode != "SYMMETRIC":
        raise ctx.fail(f"mode {mode!r} is not supported (REFLECT, SYMMETRIC are)")
    out = ctx.inputs[0]
    shape = ctx.shape(0)
    for axis, (before, after) in enumerate(widths):
        parts: list[Expr] = []
        if before:
            head = op.strided_slice(out, [0], [before], axes=[axis])
            parts.append(op.reverse(head, axis))
        parts.append(out)
        if after:
            n = shape[axis]
            tail = op.strided_slice(out, [n - after], [n], axes=[axis])
            parts.append(op.reverse(tail, axis))
        if len(parts) > 1:
            out = op.concatenate(parts, axis)
    return out
