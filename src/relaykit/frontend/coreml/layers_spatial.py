"""Converters of Core ML's spatial layers: convolution (grouped, depthwise, dilated,
transposed), pooling (windowed and global), padding, cropping and upsampling.

Core ML's tensors are ``[C, H, W]`` with leading batch axes; here they are NCHW.
Padding ``same`` is TensorFlow's: the output is ``ceil(in / stride)`` and the extra
pixel of an odd total goes to the bottom/right (``BOTTOM_RIGHT_HEAVY``) or to the
top/left (``TOP_LEFT_HEAVY``).
"""

from __future__ import annotations

import math
from typing import Any

from relaykit import op
from relaykit.frontend.common import same_pads
from relaykit.ir.expr import Expr
from relaykit.op import image, nn

from .registry import LayerContext, converter, weights

__all__ = ["same_padding"]

_TOP_LEFT_HEAVY = 1


def same_padding(size: int, kernel: int, stride: int, top_left_heavy: bool) -> tuple[int, int]:
    """``(before, after)`` padding of one axis for ``same`` padding.

    >>> same_padding(224, 3, 2, False)
    (0, 1)
    """
    return same_pads(size, kernel, stride, odd_at_end=not top_left_heavy)


def _border(amounts: Any) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` of a ``BorderAmounts`` message (height first)."""
    edges = list(amounts.borderAmounts)
    if not edges:
        return (0, 0, 0, 0)
    height, width = edges[0], edges[1] if len(edges) > 1 else edges[0]
    return (
        int(height.startEdgeSize),
        int(width.startEdgeSize),
        int(height.endEdgeSize),
        int(width.endEdgeSize),
    )


def _window_padding(
    ctx: LayerContext, params: Any, x: Expr, kernel: list[int], strides: list[int]
) -> tuple[int, int, int, int]:
    kind = params.WhichOneof(
        "ConvolutionPaddingType" if hasattr(params, "isDeconvolution") else "PoolingPaddingType"
    )
    if kind == "same":
        _, _, h, w = ctx.shape(x)
        heavy = params.same.asymmetryMode == _TOP_LEFT_HEAVY
        top, bottom = same_padding(h, kernel[0], strides[0], heavy)
        left, right = same_padding(w, kernel[1], strides[1], heavy)
        return (top, left, bottom, right)
    if kind == "valid" or kind is None:
        return _border(params.valid.paddingAmounts)
    raise ctx.fail(f"padding type {kind!r} is not supported here")


@converter("convolution")
def _convolution(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    if len(inputs) > 1:
        raise ctx.fail("weights given as a second input are not supported (only stored weights)")
    kernel = [int(k) for k in p.kernelSize] or [3, 3]
    strides = [int(s) for s in p.stride] or [1, 1]
    dilation = [int(d) for d in p.dilationFactor] or [1, 1]
    groups = int(p.nGroups) or 1
    out_ch, kernel_ch = int(p.outputChannels), int(p.kernelChannels)
    if p.isDeconvolution:
        w = weights(ctx, p.weights, "weights", [kernel_ch, out_ch // groups, *kernel], axis=1)
        if p.WhichOneof("ConvolutionPaddingType") == "same":
            raise ctx.fail("a deconvolution with 'same' padding is not supported; use 'valid'")
        weight = ctx.param("weight", w, [kernel_ch, out_ch // groups, *kernel])
        top, left, bottom, right = _border(p.valid.paddingAmounts)
        _, _, h, wd = ctx.shape(x)
        natural = [
            (size - 1) * s + d * (k - 1) + 1 - pad
            for size, s, d, k, pad in zip(
                (h, wd), strides, dilation, kernel, (top + bottom, left + right), strict=True
            )
        ]
        wanted = [int(v) for v in p.outputShape] or natural
        extra = [want - got for want, got in zip(wanted, natural, strict=True)]
        if any(e < 0 or e >= s for e, s in zip(extra, strides, strict=True)):
            raise ctx.fail(f"outputShape {wanted} cannot be reached (natural size {natural})")
        out = nn.conv2d_transpose(
            x, weight, strides=strides, padding=(top, left, bottom, right), dilation=dilation,
            groups=groups, channels=out_ch, kernel_size=kernel, output_padding=extra,
        )  # fmt: skip
    else:
        w = weights(ctx, p.weights, "weights", [out_ch, kernel_ch, *kernel])
        weight = ctx.param("weight", w, [out_ch, kernel_ch, *kernel])
        effective = [d * (k - 1) + 1 for d, k in zip(dilation, kernel, strict=True)]
        padding = _window_padding(ctx, p, x, effective, strides)
        out = nn.conv2d(
            x, weight, strides=strides, padding=padding, dilation=dilation, groups=groups,
            channels=out_ch, kernel_size=kernel,
        )  # fmt: skip
    if p.hasBias:
        out = nn.bias_add(out, ctx.param("bias", weights(ctx, p.bias, "bias"), [out_ch]))
    return out


_MAX, _AVERAGE, _L2 = 0, 1, 2


@converter("pooling")
def _pooling(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    if p.type not in (_MAX, _AVERAGE):
        raise ctx.fail("L2 pooling is not supported (max and average pooling are)")
    if p.globalPooling:
        return nn.global_max_pool2d(x) if p.type == _MAX else nn.global_avg_pool2d(x)
    kernel = [int(k) for k in p.kernelSize] or [3, 3]
    strides = [int(s) for s in p.stride] or [1, 1]
    ceil_mode = False
    if p.WhichOneof("PoolingPaddingType") == "includeLastPixel":
        amounts = [int(v) for v in p.includeLastPixel.paddingAmounts] or [0, 0]
        padding: tuple[int, ...] = (amounts[0], amounts[1], amounts[0], amounts[1])
        ceil_mode = True
    else:
        padding = _window_padding(ctx, p, x, kernel, strides)
    if p.type == _MAX:
        return nn.max_pool2d(x, kernel, strides, padding=padding, ceil_mode=ceil_mode)
    return nn.avg_pool2d(
        x, kernel, strides, padding=padding, ceil_mode=ceil_mode,
        count_include_pad=not p.avgPoolExcludePadding,
    )  # fmt: skip


@converter("padding")
def _padding(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    top, left, bottom, right = _border(p.paddingAmounts)
    rank = len(ctx.shape(x))
    pad_width = [(0, 0)] * (rank - 2) + [(top, bottom), (left, right)]
    kind = p.WhichOneof("PaddingType")
    if kind == "reflection":
        return nn.pad(x, pad_width, pad_mode="reflect")
    if kind == "replication":
        return nn.pad(x, pad_width, pad_mode="edge")
    return nn.pad(x, pad_width, pad_value=float(p.constant.value))


@converter("crop")
def _crop(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    n, c, h, w = ctx.shape(x)
    if len(inputs) == 2:
        _, _, th, tw = ctx.shape(inputs[1])
        offset = [int(v) for v in p.offset] or [0, 0]
        begin = [offset[0], offset[1]]
        end = [offset[0] + th, offset[1] + tw]
    else:
        top, left, bottom, right = _border(p.cropAmounts)
        begin, end = [top, left], [h - bottom, w - right]
    if end[0] > h or end[1] > w or end[0] <= begin[0] or end[1] <= begin[1]:
        raise ctx.fail(f"cropping rows {begin[0]}:{end[0]}, columns {begin[1]}:{end[1]} of a "
                       f"{h}x{w} input leaves nothing or goes past its edge")  # fmt: skip
    return op.strided_slice(x, begin=[0, 0, *begin], end=[n, c, *end])


_NEAREST = 0
_LINEAR_MODES = {0: "asymmetric", 1: "align_corners", 2: "half_pixel"}


@converter("upsample")
def _upsample(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    factors: list[float] = [float(v) for v in p.fractionalScalingFactor] or [
        float(v) for v in p.scalingFactor
    ]
    if not factors:
        factors = [1.0, 1.0]
    if p.mode == _NEAREST:
        if any(f != int(f) for f in factors):
            raise ctx.fail("nearest-neighbour upsampling needs integer scaling factors")
        return nn.upsampling(x, scale_h=factors[0], scale_w=factors[1])
    _, _, h, w = ctx.shape(x)
    size = [math.floor(h * factors[0]), math.floor(w * factors[1])]
    mode = _LINEAR_MODES.get(int(p.linearUpsampleMode))
    if mode is None:
        raise ctx.fail(f"linearUpsampleMode {p.linearUpsampleMode} is not supported")
    if mode == "asymmetric" and any(f != int(f) for f in factors):
        raise ctx.fail("the DEFAULT bilinear mode needs whole scaling factors (Core ML's rule)")
    return image.resize2d(x, size, method="linear", coordinate_transformation_mode=mode)


_SPACE_TO_DEPTH, _DEPTH_TO_SPACE, _PIXEL_SHUFFLE = 0, 1, 2


@converter("reorganizeData")
def _reorganize_data(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    """Space-to-depth and depth-to-space in TensorFlow's channel order (``DCR``), pixel
    shuffle in PyTorch's (``CRD``)."""
    x, block = inputs[0], int(p.blockSize)
    if block < 2:
        raise ctx.fail(f"blockSize must be 2 or more, got {block}")
    if p.mode == _SPACE_TO_DEPTH:
        return nn.space_to_depth(x, block)
    return nn.depth_to_space(x, block, mode="CRD" if p.mode == _PIXEL_SHUFFLE else "DCR")


_ALIGN_ENDPOINTS = (0, 1)  # ResizeBilinearLayerParams' STRICT_ALIGN_ / ALIGN_ENDPOINTS_MODE
_UPSAMPLE_MODE = 2


@converter("resizeBilinear")
def _resize_bilinear(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    """Align-endpoints modes: ``align_corners``; the upsample mode at whole factors:
    grid point ``i / factor`` (``asymmetric``)."""
    x = inputs[0]
    size = [int(v) for v in p.targetSize] or [1, 1]
    method = int(p.mode.samplingMethod)
    if method in _ALIGN_ENDPOINTS:
        mode = "align_corners"
    elif method == _UPSAMPLE_MODE and all(
        out % size_in == 0 for out, size_in in zip(size, ctx.shape(x)[-2:], strict=True)
    ):
        mode = "asymmetric"
    else:
        raise ctx.fail(
            f"sampling mode {method} to {size} is not supported (the align-endpoints modes "
            "are, and the upsample mode at whole factors)"
        )
    return image.resize2d(x, size, method="linear", coordinate_transformation_mode=mode)
