"""Converters of Keras's core layers: ``Dense``, ``Embedding``, the normalisations,
``Rescaling``, the reshaping layers (``Flatten``, ``Reshape``, ``Permute``,
``RepeatVector``) and the layers that are the identity at inference (dropout, noise,
regularisation)."""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .activations import apply_activation
from .registry import LayerContext, layer_converter, weight_array

__all__: list[str] = []

Kwargs = dict[str, Any]


@layer_converter(
    "InputLayer", "Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D",
    "AlphaDropout", "GaussianDropout", "GaussianNoise", "ActivityRegularization", "Identity",
)  # fmt: skip
def _identity(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    """At inference these layers pass their input through."""
    return inputs[0]


@layer_converter("Dense")
def _dense(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    x = inputs[0]
    kernel = weight_array(layer, "kernel")  # (in, units)
    if getattr(layer, "lora_enabled", False):
        raise ctx.fail("a Dense with LoRA weights is not supported: merge them first")
    units = int(kernel.shape[1])
    out = nn.dense(x, ctx.weight("kernel", kernel.T), units=units)
    if layer.use_bias:
        out = op.add(out, ctx.weight("bias"))
    return apply_activation(ctx, out, layer.activation)


@layer_converter("Embedding")
def _embedding(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    x = inputs[0]
    if not ctx.dtype(x).startswith("int"):
        x = op.cast(x, "int32")
    return op.take(ctx.weight("embeddings"), x, axis=0)


def _axes(value: Any, ndim: int) -> list[int]:
    axes = [value] if isinstance(value, (int, np.integer)) else list(value)
    return sorted(int(a) % ndim for a in axes)


def _broadcast_param(ctx: LayerContext, name: str, shape: tuple[int, ...], axes: list[int]) -> Expr:
    """The layer's weight ``name`` (of the normalised axes' sizes) reshaped to broadcast
    against an input of ``shape``."""
    arr = weight_array(ctx.layer, name)
    target = [shape[d] if d in axes else 1 for d in range(len(shape))]
    return ctx.weight(name, arr.reshape(target))


@layer_converter("BatchNormalization")
def _batch_norm(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    x = inputs[0]
    ndim = ctx.ndim(x)
    axes = _axes(layer.axis, ndim)
    if len(axes) != 1:
        raise ctx.fail(f"batch normalisation over several axes {axes} is not supported")
    mean = weight_array(layer, "moving_mean")
    ones, zeros = np.ones_like(mean), np.zeros_like(mean)
    gamma = ctx.weight("gamma") if layer.scale else ctx.weight("gamma", ones)
    beta = ctx.weight("beta") if layer.center else ctx.weight("beta", zeros)
    out = nn.batch_norm(
        x, gamma, beta, ctx.weight("moving_mean"), ctx.weight("moving_variance"),
        axis=axes[0], epsilon=float(layer.epsilon),
    )  # fmt: skip
    return out[0]


@layer_converter("LayerNormalization")
def _layer_norm(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    x = inputs[0]
    shape = ctx.shape(x)
    axes = _axes(layer.axis, len(shape))
    eps = float(layer.epsilon)
    if getattr(layer, "rms_scaling", False):
        raise ctx.fail(
            "LayerNormalization(rms_scaling=True) is deprecated in Keras and not supported: "
            "use RMSNormalization"
        )
    if axes == [len(shape) - 1]:
        n = shape[-1]
        gamma = ctx.weight("gamma") if layer.scale else ctx.weight("gamma", np.ones(n, "float32"))
        beta = ctx.weight("beta") if layer.center else ctx.weight("beta", np.zeros(n, "float32"))
        return nn.layer_norm(x, gamma, beta, axis=-1, epsilon=eps)
    mean = op.mean(x, axes, keepdims=True)
    var = op.variance(x, axes, keepdims=True)
    out = op.multiply(op.subtract(x, mean), op.rsqrt(op.add(var, ctx.scalar(eps, x))))
    if layer.scale:
        out = op.multiply(out, _broadcast_param(ctx, "gamma", shape, axes))
    if layer.center:
        out = op.add(out, _broadcast_param(ctx, "beta", shape, axes))
    return out


@layer_converter("RMSNormalization")
def _rms_norm(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    # x / sqrt(mean(x^2) + eps) * scale
    x = inputs[0]
    shape = ctx.shape(x)
    axes = _axes(layer.axis, len(shape))
    ms = op.mean(op.multiply(x, x), axes, keepdims=True)
    out = op.multiply(x, op.rsqrt(op.add(ms, ctx.scalar(float(layer.epsilon), x))))
    return op.multiply(out, _broadcast_param(ctx, "scale", shape, axes))


@layer_converter("UnitNormalization")
def _unit_norm(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    # x / sqrt(max(sum(x^2), 1e-12))
    x = inputs[0]
    axes = _axes(layer.axis, ctx.ndim(x))
    sq = op.sum(op.multiply(x, x), axes, keepdims=True)
    return op.multiply(x, op.rsqrt(op.maximum(sq, ctx.scalar(1e-12, x))))


@layer_converter("Rescaling")
def _rescaling(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    x = inputs[0]
    if not ctx.dtype(x).startswith("float"):
        x = op.cast(x, "float32")
    scale = np.asarray(layer.scale, dtype="float32")
    offset = np.asarray(layer.offset, dtype="float32")
    out = op.multiply(x, ctx.weight("scale", scale) if scale.ndim else ctx.scalar(float(scale), x))
    return op.add(
        out, ctx.weight("offset", offset) if offset.ndim else ctx.scalar(float(offset), x)
    )


@layer_converter("Flatten")
def _flatten(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    x = inputs[0]
    shape = ctx.shape(x)
    if getattr(layer, "data_format", "channels_last") == "channels_first" and len(shape) > 2:
        # Keras flattens channels-first data in channels-last order
        x = op.transpose(x, [0, *range(2, len(shape)), 1])
    return op.reshape(x, [shape[0], -1])


@layer_converter("Reshape")
def _reshape(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    x = inputs[0]
    target = [int(d) if d is not None else -1 for d in layer.target_shape]
    return op.reshape(x, [ctx.shape(x)[0], *target])


@layer_converter("Permute")
def _permute(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    return op.transpose(inputs[0], [0, *(int(d) for d in layer.dims)])


@layer_converter("RepeatVector")
def _repeat_vector(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    # (N, d) -> (N, n, d)
    return op.repeat(op.expand_dims(inputs[0], 1), int(layer.n), 1)


@layer_converter("GroupNormalization")
def _group_norm(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    # the channel axis split into (groups, channels / groups); statistics over each group
    x = inputs[0]
    shape = ctx.shape(x)
    axis = int(layer.axis) % len(shape)
    groups = int(layer.groups)
    grouped = [*shape[:axis], groups, shape[axis] // groups, *shape[axis + 1 :]]
    g = op.reshape(x, grouped)
    axes = [d for d in range(1, len(grouped)) if d != axis]
    mean = op.mean(g, axes, keepdims=True)
    var = op.variance(g, axes, keepdims=True)
    out = op.multiply(op.subtract(g, mean), op.rsqrt(op.add(var, ctx.scalar(layer.epsilon, x))))
    bshape = [1] * len(grouped)
    bshape[axis], bshape[axis + 1] = groups, shape[axis] // groups
    if layer.scale:
        out = op.multiply(out, ctx.weight("gamma", weight_array(layer, "gamma").reshape(bshape)))
    if layer.center:
        out = op.add(out, ctx.weight("beta", weight_array(layer, "beta").reshape(bshape)))
    return op.reshape(out, list(shape))


@layer_converter("Normalization")
def _normalization(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    # (x - mean) / max(sqrt(variance), epsilon), or its inverse
    import keras

    x = inputs[0]
    if not ctx.dtype(x).startswith("float"):
        x = op.cast(x, "float32")
    mean = weight_array(layer, "mean").astype("float32")
    std = np.maximum(np.sqrt(weight_array(layer, "variance")), keras.config.epsilon())
    if layer.invert:
        return op.add(
            op.multiply(x, ctx.weight("std", std.astype("float32"))), ctx.weight("mean", mean)
        )
    return op.divide(
        op.subtract(x, ctx.weight("mean", mean)), ctx.weight("std", std.astype("float32"))
    )
