"""Converters of Keras's layers that pad, crop or repeat along the spatial axes:
``ZeroPadding1D/2D/3D``, ``Cropping1D/2D/3D``, ``UpSampling1D/2D/3D``."""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr, const
from relaykit.op import image, nn

from .registry import LayerContext, as_tuple, layer_converter
from .spatial import channels_last, spatial_rank

__all__: list[str] = []

Kwargs = dict[str, Any]


def _pairs(value: Any, n: int) -> list[tuple[int, int]]:
    """Keras's padding/cropping spec (an int, n ints, or n pairs) as n pairs."""
    if isinstance(value, int):
        return [(value, value)] * n
    items = list(value)
    if n == 1 and len(items) == 2 and all(isinstance(v, int) for v in items):
        return [(int(items[0]), int(items[1]))]
    out = []
    for item in items:
        out.append(
            (int(item), int(item)) if isinstance(item, int) else (int(item[0]), int(item[1]))
        )
    return out


@layer_converter("ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D")
def _zero_padding(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    n = spatial_rank(layer)
    pairs = _pairs(layer.padding, n)

    def fn(x: Expr) -> Expr:
        return nn.pad(x, [(0, 0), *pairs, (0, 0)])

    return channels_last(ctx, inputs[0], fn)


@layer_converter("Cropping1D", "Cropping2D", "Cropping3D")
def _cropping(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    n = spatial_rank(layer)
    pairs = _pairs(layer.cropping, n)

    def fn(x: Expr) -> Expr:
        shape = ctx.shape(x)
        begin = [0, *(p[0] for p in pairs), 0]
        end = [shape[0], *(shape[i + 1] - pairs[i][1] for i in range(n)), shape[-1]]
        if any(e <= b for b, e in zip(begin, end, strict=False)):
            raise ctx.fail(f"cropping {pairs} leaves nothing of an input of shape {shape}")
        return op.strided_slice(x, begin, end)

    return channels_last(ctx, inputs[0], fn)


@layer_converter("UpSampling1D", "UpSampling2D", "UpSampling3D")
def _upsampling(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    n = spatial_rank(layer)
    size = as_tuple(layer.size, n)
    method = getattr(layer, "interpolation", "nearest")

    def fn(x: Expr) -> Expr:
        if n == 2 and method == "bilinear":
            shape = ctx.shape(x)
            out_size = (shape[1] * size[0], shape[2] * size[1])
            return image.resize2d(x, out_size, layout="NHWC", method="linear")
        if method != "nearest":
            raise ctx.fail(f"interpolation {method!r} is not supported (nearest, bilinear)")
        if n == 2:
            return nn.upsampling(x, size[0], size[1], layout="NHWC")
        for axis, s in enumerate(size, start=1):
            if s != 1:
                x = op.repeat(x, s, axis)
        return x

    return channels_last(ctx, inputs[0], fn)


_RESIZE_METHODS = {"bilinear": "linear", "nearest": "nearest_neighbor"}


@layer_converter("Resizing")
def _resizing(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    method = _RESIZE_METHODS.get(layer.interpolation)
    if method is None or layer.crop_to_aspect_ratio or layer.pad_to_aspect_ratio:
        raise ctx.fail(
            f"Resizing with interpolation {layer.interpolation!r}, crop_to_aspect_ratio="
            f"{layer.crop_to_aspect_ratio}, pad_to_aspect_ratio={layer.pad_to_aspect_ratio} "
            "is not supported (bilinear or nearest, without crop or pad)"
        )
    size = (int(layer.height), int(layer.width))

    def fn(x: Expr) -> Expr:
        if not ctx.dtype(x).startswith("float"):
            x = op.cast(x, "float32")
        if method == "nearest_neighbor":
            # TensorFlow's nearest: output i reads input floor((i + 0.5) * in / out)
            shape = ctx.shape(x)
            for axis, out in ((1, size[0]), (2, size[1])):
                src = np.floor((np.arange(out) + 0.5) * shape[axis] / out).astype("int32")
                x = op.take(x, const(np.minimum(src, shape[axis] - 1), "int32"), axis=axis)
            return x
        return image.resize2d(x, size, layout="NHWC", method=method)

    return channels_last(ctx, inputs[0], fn)
