"""Converters of Core ML's neural-network layers: activations, normalisation
(batchnorm, instance norm, MVN, LRN, L2), inner products, embeddings and softmax.

Like TVM, an inner product and a softmax over a ``[N, C, 1, 1]`` blob give
``[N, C]`` (TVM's shape; Core ML keeps the two unit axes, the values are the same).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .registry import LayerContext, converter, weights

__all__ = ["activation_expr"]


def _channel_vector(ctx: LayerContext, values: np.ndarray, x: Expr, what: str) -> Expr:
    """``values`` (one value, or one per channel) as a constant broadcasting over NCHW."""
    shape = ctx.shape(x)
    axis = ctx.channel_axis(x)
    channels = shape[axis]
    if values.size not in (1, channels):
        raise ctx.fail(f"{what} has {values.size} values; the input has {channels} channels")
    return ctx.param(what, values, [values.size] + [1] * (len(shape) - axis - 1))


def _softplus(x: Expr) -> Expr:
    """``log(1 + exp(x))`` without overflow: ``relu(x) + log(1 + exp(-|x|))``."""
    one = LayerContext.scalar(1.0)
    return op.add(nn.relu(x), op.log(op.add(one, op.exp(op.negative(op.abs(x))))))


def _weighted_activation(ctx: LayerContext, kind: str, par: Any, x: Expr) -> Expr:
    """PReLU and parametric softplus: parameters per channel (or one for all)."""
    if kind == "PReLU":
        alpha = weights(ctx, par.alpha, "alpha")
        axis = ctx.channel_axis(x)
        channels = ctx.shape(x)[axis]
        if alpha.size == 1:
            alpha = np.full(channels, alpha[0], dtype=np.float32)
        return nn.prelu(x, ctx.param("alpha", alpha, [channels]), axis=axis)
    scale = _channel_vector(ctx, weights(ctx, par.alpha, "alpha"), x, "alpha")
    slope = _channel_vector(ctx, weights(ctx, par.beta, "beta"), x, "beta")
    return op.multiply(scale, _softplus(op.multiply(slope, x)))


def activation_expr(ctx: LayerContext, p: Any, x: Expr) -> Expr:  # noqa: PLR0911
    """``x`` through the Core ML ``ActivationParams`` ``p`` (the function its
    ``NonlinearityType`` names, with its alpha / beta / weights); shared by the
    ``activation`` layer and the recurrent layers' gate activations."""
    kind = p.WhichOneof("NonlinearityType")
    if kind is None:
        raise ctx.fail("the activation names no function")
    par: Any = getattr(p, kind)
    if kind in ("PReLU", "parametricSoftplus"):
        return _weighted_activation(ctx, kind, par, x)
    s = ctx.scalar
    if kind == "ReLU":
        return nn.relu(x)
    if kind == "leakyReLU":
        return nn.leaky_relu(x, alpha=float(par.alpha))
    if kind == "thresholdedReLU":
        return op.where(op.greater(x, s(par.alpha)), x, op.zeros_like(x))
    if kind == "tanh":
        return op.tanh(x)
    if kind == "scaledTanh":
        return op.multiply(s(par.alpha), op.tanh(op.multiply(s(par.beta), x)))
    if kind == "sigmoid":
        return op.sigmoid(x)
    if kind == "sigmoidHard":
        return op.clip(op.add(op.multiply(s(par.alpha), x), s(par.beta)), 0.0, 1.0)
    if kind == "linear":
        return op.add(op.multiply(s(par.alpha), x), s(par.beta))
    if kind == "ELU":
        negative = op.multiply(s(par.alpha), op.subtract(op.exp(x), s(1.0)))
        return op.where(op.greater(x, s(0.0)), x, negative)
    if kind == "softsign":
        return op.divide(x, op.add(s(1.0), op.abs(x)))
    if kind == "softplus":
        return _softplus(x)
    raise ctx.fail(f"activation {kind!r} is not supported")


converter("activation")(lambda ctx, p, inputs: activation_expr(ctx, p, inputs[0]))


def _moments(x: Expr, axes: list[int]) -> tuple[Expr, Expr]:
    mean = op.mean(x, axis=axes, keepdims=True)
    centred = op.subtract(x, mean)
    return centred, op.mean(op.multiply(centred, centred), axis=axes, keepdims=True)


@converter("batchnorm")
def _batchnorm(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    axis = ctx.channel_axis(x)
    channels = int(p.channels) or ctx.shape(x)[axis]
    gamma = ctx.param("gamma", weights(ctx, p.gamma, "gamma"), [channels])
    beta = ctx.param("beta", weights(ctx, p.beta, "beta"), [channels])
    if p.computeMeanVar or p.instanceNormalization:
        rank = len(ctx.shape(x))
        spatial = list(range(axis + 1, rank))
        axes = spatial if p.instanceNormalization else [*range(axis), *spatial]
        centred, var = _moments(x, axes)
        norm = op.divide(centred, op.sqrt(op.add(var, ctx.scalar(p.epsilon))))
        shape = [channels] + [1] * (rank - axis - 1)
        return op.add(op.multiply(norm, op.reshape(gamma, shape)), op.reshape(beta, shape))
    mean = ctx.param("mean", weights(ctx, p.mean, "mean"), [channels])
    var = ctx.param("variance", weights(ctx, p.variance, "variance"), [channels])
    return nn.batch_norm(x, gamma, beta, mean, var, axis=axis, epsilon=float(p.epsilon))[0]


@converter("mvn")
def _mvn(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    rank = len(ctx.shape(x))
    axes = list(range(1 if p.acrossChannels else 2, rank))
    centred, var = _moments(x, axes)
    if not p.normalizeVariance:
        return centred
    return op.divide(centred, op.add(op.sqrt(var), ctx.scalar(p.epsilon)))


@converter("innerProduct")
def _inner_product(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    """Rank 1-3: over the last axis; rank 4: over C*H*W (``[N, out]``, TVM's shape);
    rank 5: over C*H*W of each ``[Seq, B]``."""
    x = inputs[0]
    shape = ctx.shape(x)
    out_ch, in_ch = int(p.outputChannels), int(p.inputChannels)
    flat: Expr
    if len(shape) >= 4:
        lead = shape[:-3]
        flat = op.reshape(x, [math.prod(lead), math.prod(shape[-3:])])
    else:
        lead = shape[:-1]
        flat = op.reshape(x, [math.prod(lead), shape[-1]]) if len(shape) != 2 else x
    if int(math.prod(shape)) // max(math.prod(lead), 1) != in_ch:
        raise ctx.fail(f"the input {list(shape)} does not hold {in_ch} input channels per row")
    w = weights(ctx, p.weights, "weights", [out_ch, in_ch])
    weight = ctx.param("weight", w, [out_ch, in_ch])
    out = nn.dense(flat, weight, units=out_ch)
    if p.hasBias:
        out = nn.bias_add(out, ctx.param("bias", weights(ctx, p.bias, "bias"), [out_ch]))
    if len(shape) == 4:
        return out
    if len(shape) == 5:
        return op.reshape(out, [*lead, out_ch, 1, 1])
    return op.reshape(out, [*lead, out_ch]) if len(shape) != 2 else out


@converter("embedding")
def _embedding(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    out_ch, vocab = int(p.outputChannels), int(p.inputDim)
    table = weights(ctx, p.weights, "weights", [out_ch, vocab]).reshape(out_ch, vocab).T
    rows = ctx.param("table", table, [vocab, out_ch])
    batch = ctx.shape(x)[0]
    index = op.cast(op.reshape(x, [batch]), "int32")
    out = op.take(rows, index, axis=0)
    if p.hasBias:
        out = op.add(out, ctx.param("bias", weights(ctx, p.bias, "bias"), [out_ch]))
    return op.reshape(out, [batch, out_ch, 1, 1])


@converter("softmax")
def _softmax(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    shape = ctx.shape(x)
    out = nn.softmax(x, axis=ctx.channel_axis(x))
    if len(shape) > 2 and all(d == 1 for d in shape[2:]):
        out = nn.batch_flatten(out)
    return out


@converter("lrn")
def _lrn(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    return nn.lrn(
        x, size=int(p.localSize), axis=ctx.channel_axis(x), bias=float(p.k),
        alpha=float(p.alpha), beta=float(p.beta),
    )  # fmt: skip


@converter("l2normalize")
def _l2normalize(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    axes = list(range(ctx.channel_axis(x), len(ctx.shape(x))))
    total = op.sum(op.multiply(x, x), axis=axes, keepdims=True)
    return op.divide(x, op.sqrt(op.add(total, ctx.scalar(p.epsilon))))
