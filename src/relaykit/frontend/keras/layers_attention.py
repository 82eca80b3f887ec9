"""Converters of ``EinsumDense``, ``MultiHeadAttention``, ``Attention`` (dot or
concat scores) and ``AdditiveAttention``.

``MultiHeadAttention`` is converted from the layer's own pieces: its query, key, value
and output projections (``EinsumDense`` sub-layers) and the einsum equations it built
for its attention axes, so any ``attention_axes`` converts. The scores are scaled by
``1/sqrt(key_dim)``, masked (``attention_mask``, ``use_causal_mask``, the inputs' masks)
as Keras does (masked scores become -1e9; a fully masked row gives zeros where Keras's
explicit path does, the uniform average where its fused path does),
and ``return_attention_scores`` gives them as a second output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr, const
from relaykit.op import nn

from .activations import apply_activation
from .registry import LayerContext, layer_converter, weight_array

__all__: list[str] = []

Kwargs = dict[str, Any]


def _einsum_dense(ctx: LayerContext, dense: Any, x: Expr, prefix: str) -> Expr:
    if getattr(dense, "lora_enabled", False):
        raise ctx.fail("EinsumDense with LoRA weights is not supported: merge them first")
    kernel = ctx.weight(f"{prefix}kernel", weight_array(dense, "kernel"))
    out = op.einsum([x, kernel], str(dense.equation))
    if getattr(dense, "bias", None) is not None:
        out = op.add(out, ctx.weight(f"{prefix}bias", weight_array(dense, "bias")))
    return apply_activation(ctx, out, getattr(dense, "activation", None))


@layer_converter("EinsumDense")
def _einsum_dense_layer(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    return _einsum_dense(ctx, layer, inputs[0], "")


def _as_bool(ctx: LayerContext, mask: Any) -> Expr | None:
    if not isinstance(mask, Expr):
        return None
    return mask if ctx.dtype(mask) == "bool" else op.cast(mask, "bool")


def _and(a: Expr | None, b: Expr | None) -> Expr | None:
    if a is None:
        return b
    return a if b is None else op.logical_and(a, b)


@layer_converter("MultiHeadAttention")
def _multi_head_attention(
    ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs
) -> list[Expr]:
    if getattr(layer, "_use_gate", False) or getattr(layer, "_sliding_window", None) is not None:
        raise ctx.fail("MultiHeadAttention with a gate or a sliding window is not supported")
    query, value = inputs[0], inputs[1]
    key = inputs[2] if len(inputs) > 2 else kwargs.get("key")
    key = key if isinstance(key, Expr) else value
    # the mask over (query steps, key steps), as Keras combines it
    mask = _as_bool(ctx, kwargs.get("attention_mask"))
    q_mask = _as_bool(ctx, kwargs.get("query_mask"))
    if q_mask is not None:
        mask = _and(mask, op.expand_dims(q_mask, -1))
    for name in ("value_mask", "key_mask"):
        m = _as_bool(ctx, kwargs.get(name))
        if m is not None:
            mask = _and(mask, op.expand_dims(m, -2))
    if kwargs.get("use_causal_mask"):
        t, s = ctx.shape(query)[1], ctx.shape(value)[1]
        causal = np.tril(np.ones((t, s), dtype=bool))[None]
        mask = _and(mask, const(causal, "bool"))
    q = _einsum_dense(ctx, layer._query_dense, query, "query.")
    k = _einsum_dense(ctx, layer._key_dense, key, "key.")
    v = _einsum_dense(ctx, layer._value_dense, value, "value.")
    q = op.multiply(q, ctx.scalar(float(layer._inverse_sqrt_key_dim), q))
    scores = op.einsum([k, q], str(layer._dot_product_equation))
    axes = layer._softmax.axis
    axes = [int(a) for a in (axes if isinstance(axes, (list, tuple)) else [axes])]
    if mask is not None:
        n_axes = len(layer._attention_axes)
        while ctx.ndim(mask) < ctx.ndim(scores):
            mask = op.expand_dims(mask, ctx.ndim(mask) - 2 * n_axes)
        scores = op.where(mask, scores, ctx.scalar(-1e9, scores))
    shifted = op.subtract(scores, op.max(scores, axes, keepdims=True))
    e = op.exp(shifted)
    attention: Expr = op.divide(e, op.sum(e, axes, keepdims=True))
    # Keras's fused path (no dropout, no scores asked, one attention axis) leaves a fully
    # masked row uniform; its explicit path zeroes it
    scores_asked = bool(kwargs.get("return_attention_scores"))
    fused = not (layer._dropout > 0.0 or scores_asked or ctx.ndim(q) != 4)
    if mask is not None and not fused:
        attention = op.where(mask, attention, ctx.scalar(0.0, attention))
    out: Expr = op.einsum([attention, v], str(layer._combine_equation))
    out = _einsum_dense(ctx, layer._output_dense, out, "output.")
    return [out, attention] if scores_asked else [out]


def _scores(ctx: LayerContext, layer: Any, q: Expr, k: Expr) -> Expr:
    """``Attention`` / ``AdditiveAttention`` scores of shape (batch, Tq, Tv)."""
    additive = type(layer).__name__ == "AdditiveAttention"
    if not additive and layer.score_mode == "dot":
        scores = nn.batch_matmul(q, k, transpose_b=True)
        if layer.scale is not None:
            scores = op.multiply(scores, ctx.weight("scale"))
        return scores
    pair = op.add(op.expand_dims(q, -2), op.expand_dims(k, -3))  # (B, Tq, Tv, dim)
    if additive:
        t = op.tanh(pair)
        return op.sum(op.multiply(ctx.weight("scale"), t) if layer.use_scale else t, [-1])
    if layer.scale is not None:
        pair = op.multiply(ctx.weight("scale"), pair)
    return op.multiply(ctx.weight("concat_score_weight"), op.sum(op.tanh(pair), [-1]))


@layer_converter("Attention", "AdditiveAttention")
def _attention(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> list[Expr]:
    q, v = inputs[0], inputs[1]
    k = inputs[2] if len(inputs) > 2 else v
    masks = kwargs.get("mask") or [None, None]
    q_mask, v_mask = _as_bool(ctx, masks[0]), _as_bool(ctx, masks[1])
    scores = _scores(ctx, layer, q, k)
    keep: Expr | None = None if v_mask is None else op.expand_dims(v_mask, -2)
    if kwargs.get("use_causal_mask"):
        tq, tv = ctx.shape(scores)[-2:]
        keep = _and(keep, const(np.tril(np.ones((tq, tv), dtype=bool))[None], "bool"))
    if keep is not None:  # masked scores lowered by 1e9, as Keras does
        scores = op.where(keep, scores, op.subtract(scores, ctx.scalar(1e9, scores)))
    weights = nn.softmax(scores, axis=-1)
    out = nn.batch_matmul(weights, v, transpose_b=False)
    if q_mask is not None:
        out = op.where(op.expand_dims(q_mask, -1), out, ctx.scalar(0.0, out))
    return [out, weights] if kwargs.get("return_attention_scores") else [out]
