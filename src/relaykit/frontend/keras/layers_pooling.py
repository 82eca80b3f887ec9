"""Converters of Keras's pooling layers: ``MaxPooling1D/2D/3D``,
``AveragePooling1D/2D/3D`` (``"same"`` averages count only the real elements, as in
Keras) and the global poolings (with ``keepdims``)."""

from __future__ import annotations

from typing import Any

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .registry import LayerContext, as_tuple, layer_converter
from .spatial import DATA_LAYOUT, channels_last, flat_pads, padding_pairs, spatial_rank

__all__: list[str] = []

Kwargs = dict[str, Any]
_MAX = {1: nn.max_pool1d, 2: nn.max_pool2d, 3: nn.max_pool3d}
_AVG = {1: nn.avg_pool1d, 2: nn.avg_pool2d, 3: nn.avg_pool3d}


@layer_converter(
    "MaxPooling1D", "MaxPooling2D", "MaxPooling3D",
    "AveragePooling1D", "AveragePooling2D", "AveragePooling3D",
)  # fmt: skip
def _pool(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    n = spatial_rank(layer)
    window = as_tuple(layer.pool_size, n)
    strides = as_tuple(layer.strides if layer.strides is not None else window, n)
    is_max = type(layer).__name__.startswith("Max")

    def fn(x: Expr) -> Expr:
        pads = flat_pads(padding_pairs(ctx, layer.padding, ctx.shape(x)[1:-1], window, strides))
        if is_max:
            return _MAX[n](x, window, strides, padding=pads, layout=DATA_LAYOUT[n])
        return _AVG[n](
            x, window, strides, padding=pads, layout=DATA_LAYOUT[n], count_include_pad=False
        )

    return channels_last(ctx, inputs[0], fn)


@layer_converter(
    "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D",
    "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D",
)  # fmt: skip
def _global_pool(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    n = spatial_rank(layer)
    is_max = "Max" in type(layer).__name__
    keepdims = bool(getattr(layer, "keepdims", False))
    mask = kwargs.get("mask")
    if mask is not None:
        return _masked_average(ctx, layer, inputs[0], mask, keepdims)

    def fn(x: Expr) -> Expr:
        shape = ctx.shape(x)
        if n == 2:  # the 2-d operators, which layout passes know
            pool = nn.global_max_pool2d if is_max else nn.global_avg_pool2d
            out = pool(x, layout="NHWC")
            return out if keepdims else op.reshape(out, [shape[0], shape[-1]])
        axes = list(range(1, n + 1))
        return (op.max if is_max else op.mean)(x, axes, keepdims=keepdims)

    x = inputs[0]
    if keepdims:
        return channels_last(ctx, x, fn)
    if getattr(layer, "data_format", "channels_last") == "channels_first":
        nd = ctx.ndim(x)
        x = op.transpose(x, [0, *range(2, nd), 1])
    return fn(x)


def _masked_average(ctx: LayerContext, layer: Any, x: Expr, mask: Any, keepdims: bool) -> Expr:
    """GlobalAveragePooling1D over the unmasked steps only."""
    if not isinstance(mask, Expr) or type(layer).__name__ != "GlobalAveragePooling1D":
        raise ctx.fail("a mask is supported by GlobalAveragePooling1D only")
    steps = 1 if getattr(layer, "data_format", "channels_last") == "channels_last" else 2
    weights = op.expand_dims(op.cast(mask, ctx.dtype(x)), 3 - steps)
    total = op.sum(op.multiply(x, weights), [steps], keepdims=keepdims)
    return op.divide(total, op.sum(weights, [steps], keepdims=keepdims))
