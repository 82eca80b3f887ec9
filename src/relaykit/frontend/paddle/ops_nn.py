"""Converters of Paddle's neural-network ops: convolutions, pooling, normalisation,
softmax, dropout, resizing, padding, grid sampling and the softmax cross-entropy
(activations: :mod:`.ops_activation`).

Paddle's ``paddings`` come as ``[h, w]`` or ``[top, bottom, left, right]``, and
``padding_algorithm`` may be ``SAME`` or ``VALID`` (computed here from the input
size); Relay's 2-d padding is ``(top, left, bottom, right)``.
"""

from __future__ import annotations

import numpy as np

from relaykit import op
from relaykit.frontend.common import same_pads
from relaykit.ir.expr import Expr
from relaykit.op import image, nn, vision

from .registry import OpContext, converter

__all__: list[str] = []


def _pads(
    ctx: OpContext,
    in_size: tuple[int, ...],
    kernel: list[int],
    strides: list[int],
    dilations: list[int],
) -> tuple[list[int], list[int]]:
    """Relay ``(before..., after...)`` padding of a window op, and its dilations:
    ``SAME`` pads so that the output is ``ceil(size / stride)`` and, as Paddle does,
    drops the dilation."""
    algorithm = str(ctx.attr("padding_algorithm", default="EXPLICIT")).upper()
    rank = len(kernel)
    if algorithm == "VALID":
        return [0] * (2 * rank), dilations
    if algorithm == "SAME":
        pairs = [same_pads(n, k, s) for n, k, s in zip(in_size, kernel, strides, strict=True)]
        return [p[0] for p in pairs] + [p[1] for p in pairs], [1] * rank
    pads = [int(p) for p in ctx.attr("paddings", default=[0] * rank)]
    if len(pads) == rank:
        return pads + pads, dilations
    if len(pads) == 2 * rank:  # [d0_before, d0_after, d1_before, d1_after]
        return pads[0::2] + pads[1::2], dilations
    raise ctx.fail(f"paddings {pads} do not fit a {rank}-d window")


def _to_nchw(ctx: OpContext, x: Expr, key: str = "data_format") -> tuple[Expr, bool]:
    layout = str(ctx.attr(key, "data_layout", default="NCHW"))
    if layout in ("NHWC", "NLC", "NDHWC", "NWC"):
        n = ctx.ndim(x)
        return op.transpose(x, [0, n - 1, *range(1, n - 1)]), True
    return x, False


def _from_nchw(x: Expr, nhwc: bool, ndim: int) -> Expr:
    return op.transpose(x, [0, *range(2, ndim), 1]) if nhwc else x


@converter("conv2d", "depthwise_conv2d", "conv3d")
def _conv(ctx: OpContext) -> Expr:
    x, nhwc = _to_nchw(ctx, ctx.input("input"))
    weight = ctx.input("filter")
    wshape = ctx.shape(weight)
    rank = len(wshape) - 2
    kernel = list(wshape[2:])
    strides = [int(s) for s in ctx.attr("strides", default=[1] * rank)]
    dilations = [int(d) for d in ctx.attr("dilations", default=[1] * rank)]
    groups = int(ctx.attr("groups", default=1))
    pads, dilations = _pads(ctx, ctx.shape(x)[2:], kernel, strides, dilations)
    make = nn.conv3d if rank == 3 else nn.conv2d
    out = make(
        x, weight, strides=strides, padding=pads, dilation=dilations, groups=groups,
        channels=wshape[0], kernel_size=kernel,
    )  # fmt: skip
    if ctx.has("bias"):
        out = nn.bias_add(out, ctx.input("bias"), axis=1)
    return _from_nchw(out, nhwc, rank + 2)


@converter("conv2d_transpose", "depthwise_conv2d_transpose")
def _conv_transpose(ctx: OpContext) -> Expr:
    x, nhwc = _to_nchw(ctx, ctx.input("x", "input"))
    weight = ctx.input("filter")
    wshape = ctx.shape(weight)
    kernel = list(wshape[2:])
    strides = [int(s) for s in ctx.attr("strides", default=[1, 1])]
    dilations = [int(d) for d in ctx.attr("dilations", default=[1, 1])]
    groups = int(ctx.attr("groups", default=1))
    pads, dilations = _pads(ctx, ctx.shape(x)[2:], kernel, strides, dilations)
    output_padding = [int(p) for p in ctx.attr("output_padding", default=[]) or [0, 0]]
    out = nn.conv2d_transpose(
        x, weight, strides=strides, padding=pads, dilation=dilations, groups=groups,
        channels=wshape[1] * groups, kernel_size=kernel, kernel_layout="IOHW",
        output_padding=output_padding,
    )  # fmt: skip
    return _from_nchw(out, nhwc, 4)


@converter("batch_norm")
def _batch_norm(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    layout = str(ctx.attr("data_layout", "data_format", default="NCHW"))
    axis = ctx.ndim(x) - 1 if layout in ("NHWC", "NLC", "NDHWC") else 1
    out = nn.batch_norm(
        x, ctx.input("scale"), ctx.input("bias"), ctx.input("mean"), ctx.input("variance"),
        axis=axis, epsilon=float(ctx.attr("epsilon", default=1e-5)),
    )  # fmt: skip
    return out[0]


@converter("layer_norm")
def _layer_norm(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    shape = ctx.shape(x)
    begin = ctx.axis(ctx.attr("begin_norm_axis", default=1), len(shape))
    eps = float(ctx.attr("epsilon", default=1e-5))
    scale, bias = ctx.optional("scale"), ctx.optional("bias")
    if begin == len(shape) - 1:
        dtype = ctx.dtype(x)
        gamma = scale if scale is not None else ctx.const([1.0] * shape[-1], dtype)
        beta = bias if bias is not None else ctx.const([0.0] * shape[-1], dtype)
        return nn.layer_norm(x, gamma, beta, axis=-1, epsilon=eps)
    axes = list(range(begin, len(shape)))
    mean = op.mean(x, axes, keepdims=True)
    var = op.variance(x, axes, keepdims=True, unbiased=False)
    eps_const = ctx.const(eps, ctx.dtype(x))
    out = op.divide(op.subtract(x, mean), op.sqrt(op.add(var, eps_const)))
    if scale is not None:
        out = op.multiply(out, op.reshape(scale, list(shape[begin:])))
    if bias is not None:
        out = op.add(out, op.reshape(bias, list(shape[begin:])))
    return out


_POOLS = {
    2: (nn.max_pool2d, nn.avg_pool2d, nn.adaptive_max_pool2d, nn.adaptive_avg_pool2d),
    3: (nn.max_pool3d, nn.avg_pool3d, nn.adaptive_max_pool3d, nn.adaptive_avg_pool3d),
}


@converter("pool2d", "pool3d")
def _pool(ctx: OpContext) -> Expr:
    x, nhwc = _to_nchw(ctx, ctx.input("x"))
    rank = ctx.ndim(x) - 2
    kind = str(ctx.attr("pooling_type", default="max"))
    if kind not in ("max", "avg"):
        raise ctx.fail(f"pooling_type {kind!r} is not supported (max and avg are)")
    max_pool, avg_pool, adaptive_max, adaptive_avg = _POOLS[rank]
    ksize = [int(k) for k in ctx.values(("kernel_size",), ("ksize", "kernel_size"))]
    if bool(ctx.attr("global_pooling", default=False)):
        ksize, adaptive = [1] * rank, True
    else:
        adaptive = bool(ctx.attr("adaptive", default=False))
    if adaptive:
        out = (adaptive_max if kind == "max" else adaptive_avg)(x, output_size=ksize)
    else:
        strides = [int(s) for s in ctx.attr("strides", default=[1] * rank)]
        pads, _ = _pads(ctx, ctx.shape(x)[2:], ksize, strides, [1] * rank)
        ceil_mode = bool(ctx.attr("ceil_mode", default=False))
        if kind == "max":
            out = max_pool(x, pool_size=ksize, strides=strides, padding=pads, ceil_mode=ceil_mode)
        else:
            out = avg_pool(
                x, pool_size=ksize, strides=strides, padding=pads, ceil_mode=ceil_mode,
                count_include_pad=not bool(ctx.attr("exclusive", default=True)),
            )  # fmt: skip
    return _from_nchw(out, nhwc, rank + 2)


@converter("softmax", "log_softmax")
def _softmax(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    axis = ctx.axis(ctx.attr("axis", default=-1), ctx.ndim(x))
    return nn.softmax(x, axis) if ctx.type == "softmax" else nn.log_softmax(x, axis)


@converter("dropout")
def _dropout(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    mode = str(ctx.attr("dropout_implementation", "mode", default="downgrade_in_infer"))
    if mode == "upscale_in_train":
        return x
    p = ctx.values(("p",), ("dropout_prob", "p"), default=0.5)
    p = float(p[0] if isinstance(p, list) else p.item() if hasattr(p, "item") else p)
    return op.multiply(x, ctx.const(1.0 - p, ctx.dtype(x)))


# -- resizing -------------------------------------------------------------------------------
_METHODS = {
    "nearest_interp": "nearest_neighbor",
    "bilinear_interp": "linear",
    "bicubic_interp": "cubic",
}


@converter(*_METHODS)
def _interpolate(ctx: OpContext) -> Expr:
    x, nhwc = _to_nchw(ctx, ctx.input("x"), "data_format")
    if nhwc is False:
        x, nhwc = _to_nchw(ctx, x, "data_layout")
    in_h, in_w = ctx.shape(x)[2:]
    size = ctx.values(("out_size", "outsize", "size_tensor", "sizetensor"), (), default=None)
    if size is None:
        out_h, out_w = int(ctx.attr("out_h", default=-1)), int(ctx.attr("out_w", default=-1))
        if out_h <= 0 or out_w <= 0:
            scale = ctx.values(("scale_tensor", "scale"), ("scale",), default=[])
            scale = [float(s) for s in (scale if isinstance(scale, list) else [scale])]
            if not scale or scale[0] <= 0:
                raise ctx.fail("has neither an output size nor a scale")
            sh, sw = (scale[0], scale[0]) if len(scale) == 1 else (scale[0], scale[1])
            out_h, out_w = int(in_h * sh), int(in_w * sw)
        size = [out_h, out_w]
    method = _METHODS[ctx.type]
    align_corners = bool(ctx.attr("align_corners", default=False))
    rounding = ""
    if method == "nearest_neighbor":
        mode = "align_corners" if align_corners else "asymmetric"
        rounding = "round" if align_corners else "floor"
    elif align_corners:
        mode = "align_corners"
    elif method == "linear" and int(ctx.attr("align_mode", default=1)) == 1:
        mode = "asymmetric"
    else:
        mode = "half_pixel"
    out = image.resize2d(
        x, [int(s) for s in size], layout="NCHW", method=method,
        coordinate_transformation_mode=mode, rounding_method=rounding, cubic_alpha=-0.75,
    )  # fmt: skip
    return _from_nchw(out, nhwc, 4)


# -- normalisation over groups, padding, pixel shuffle --------------------------------------
def _group_normalise(ctx: OpContext, x: Expr, groups: int, eps: float) -> Expr:
    """``x`` (N, C, ...) normalised over each group of ``C // groups`` channels."""
    shape = ctx.shape(x)
    grouped = op.reshape(x, [shape[0], groups, -1])
    mean = op.mean(grouped, [2], keepdims=True)
    var = op.variance(grouped, [2], keepdims=True, unbiased=False)
    eps_const = ctx.const(eps, ctx.dtype(x))
    out = op.divide(op.subtract(grouped, mean), op.sqrt(op.add(var, eps_const)))
    return op.reshape(out, list(shape))


def _affine(ctx: OpContext, out: Expr, ndim: int) -> Expr:
    trailing = [1] * (ndim - 2)
    if ctx.has("scale"):
        out = op.multiply(out, op.reshape(ctx.input("scale"), [-1, *trailing]))
    if ctx.has("bias"):
        out = op.add(out, op.reshape(ctx.input("bias"), [-1, *trailing]))
    return out


@converter("group_norm")
def _group_norm(ctx: OpContext) -> Expr:
    x, nhwc = _to_nchw(ctx, ctx.input("x"), "data_format")
    eps = float(ctx.attr("epsilon", default=1e-5))
    out = _group_normalise(ctx, x, int(ctx.attr("groups")), eps)
    return _from_nchw(_affine(ctx, out, ctx.ndim(x)), nhwc, ctx.ndim(x))


@converter("instance_norm")
def _instance_norm(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    eps = float(ctx.attr("epsilon", default=1e-5))
    out = _group_normalise(ctx, x, ctx.shape(x)[1], eps)
    return _affine(ctx, out, ctx.ndim(x))


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "edge": "edge"}


@converter("pad3d", "pad2d", "pad")
def _pad(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    n = ctx.ndim(x)
    pads = [int(p) for p in ctx.values(("paddings",), ("paddings",))]
    mode = str(ctx.attr("mode", default="constant"))
    if mode not in _PAD_MODES:
        raise ctx.fail(f"padding mode {mode!r} is not supported (constant, reflect, replicate)")
    value = ctx.values(("pad_value",), ("pad_value", "value"), default=0.0)
    value = float(value[0] if isinstance(value, list) else value)
    if ctx.type == "pad":  # [d0_before, d0_after, d1_before, ...] over every dim
        width = [[pads[2 * i], pads[2 * i + 1]] for i in range(n)]
    else:
        layout = str(ctx.attr("data_format", default="NCDHW" if n == 5 else "NCHW"))
        channels_last = layout.endswith("C")
        spatial = list(range(1, n - 1)) if channels_last else list(range(2, n))
        width = [[0, 0] for _ in range(n)]
        if ctx.type == "pad2d":  # [top, bottom, left, right]
            pairs = [pads[0:2], pads[2:4]]
        else:  # [left, right, top, bottom, front, back]: the last spatial dim first
            pairs = [pads[2 * i : 2 * i + 2] for i in range(len(pads) // 2)][::-1]
        for axis, pair in zip(spatial[-len(pairs) :], pairs[-len(spatial) :], strict=True):
            width[axis] = list(pair)
    return nn.pad(x, width, pad_value=value, pad_mode=_PAD_MODES[mode])


@converter("pixel_shuffle")
def _pixel_shuffle(ctx: OpContext) -> Expr:
    x, nhwc = _to_nchw(ctx, ctx.input("x"), "data_format")
    out = nn.depth_to_space(x, int(ctx.attr("upscale_factor")), mode="CRD")
    return _from_nchw(out, nhwc, 4)


@converter("grid_sample")
def _grid_sample(ctx: OpContext) -> Expr:
    """``x`` sampled at ``grid`` (``[N, H, W, 2]``, or ``[N, D, H, W, 3]`` for 5-d
    input); Relay takes the grid's coordinates as its second axis."""
    x, grid = ctx.input("x"), ctx.input("grid")
    n = ctx.ndim(x)
    if n not in (4, 5):
        raise ctx.fail(f"grid_sample of a {n}-d input is not supported (4-d and 5-d are)")
    mode = str(ctx.attr("mode", default="bilinear"))
    if mode not in ("bilinear", "nearest"):
        raise ctx.fail(f"grid_sample mode {mode!r} is not supported (bilinear, nearest)")
    return image.grid_sample(
        x, op.transpose(grid, [0, n - 1, *range(1, n - 1)]), method=mode,
        layout="NCHW" if n == 4 else "NCDHW",
        padding_mode=str(ctx.attr("padding_mode", default="zeros")),
        align_corners=bool(ctx.attr("align_corners", default=True)),
    )  # fmt: skip


@converter("norm")
def _l2_norm(ctx: OpContext) -> dict[str, Expr]:
    """ProgramDesc's ``norm``: ``x`` over its L2 norm along ``axis``."""
    x = ctx.input("x")
    axis = ctx.axis(ctx.attr("axis", default=-1), ctx.ndim(x))
    eps = ctx.const(float(ctx.attr("epsilon", default=1e-10)), ctx.dtype(x))
    norm = op.sqrt(op.add(op.sum(op.multiply(x, x), [axis], keepdims=True), eps))
    return {"out": op.divide(x, norm), "norm": norm}


@converter("cross_entropy_with_softmax")
def _softmax_cross_entropy(ctx: OpContext) -> dict[str, Expr]:
    logits, label = ctx.input("input", "logits"), ctx.input("label")
    n = ctx.ndim(logits)
    axis = ctx.axis(ctx.attr("axis", default=-1), n)
    use_softmax = bool(ctx.attr("use_softmax", default=True))
    prob = nn.softmax(logits, axis) if use_softmax else logits
    log_prob = nn.log_softmax(logits, axis) if use_softmax else op.log(logits)
    if bool(ctx.attr("soft_label", default=False)):
        loss = op.negative(op.sum(op.multiply(label, log_prob), [axis], keepdims=True))
    else:
        index = op.cast(label, "int64")
        ignore = int(ctx.attr("ignore_index", default=-100))
        keep = op.not_equal(index, ctx.const(ignore, "int64"))
        picked = op.gather(log_prob, axis, op.where(keep, index, op.zeros_like(index)))
        loss = op.where(keep, op.negative(picked), op.zeros_like(picked))
    return {"softmax": prob, "loss": loss}


@converter("roi_align")
def _roi_align(ctx: OpContext) -> Expr:
    """``paddle.vision.ops.roi_align``: boxes ``[R, 4]`` grouped by image through
    ``boxes_num``; Relay's rois carry each box's image index first."""
    x, boxes = ctx.input("x"), ctx.input("boxes", "rois")
    count = ctx.shape(boxes)[0]
    dtype = ctx.dtype(boxes)
    image: Expr
    if ctx.has("boxes_num", "roisnum"):
        ends = op.cumsum(op.cast(ctx.input("boxes_num", "roisnum"), "int64"), 0)
        index = ctx.const(np.arange(count).reshape(count, 1), "int64")
        # a box's image is the number of images whose boxes all come before it
        image = op.sum(op.cast(op.greater_equal(index, op.expand_dims(ends, 0)), dtype), [1])
    else:
        image = ctx.const(np.zeros(count), dtype)
    rois = op.concatenate([op.expand_dims(image, 1), boxes], 1)
    return vision.roi_align(
        x, rois,
        pooled_size=[int(ctx.attr("pooled_height", default=1)),
                     int(ctx.attr("pooled_width", default=1))],
        spatial_scale=float(ctx.attr("spatial_scale", default=1.0)),
        sample_ratio=int(ctx.attr("sampling_ratio", default=-1)),
        aligned=bool(ctx.attr("aligned", default=False)),
    )  # fmt: skip
