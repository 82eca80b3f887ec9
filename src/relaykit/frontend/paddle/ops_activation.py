"""Converters of Paddle's activations: ReLU and its clamped forms, GELU (exact and
tanh), the hard and soft sigmoid/swish family, ELU/SELU, softplus, mish, PReLU, the
shrink functions."""

from __future__ import annotations

import math

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .registry import OpContext, converter

__all__: list[str] = []


def _scalar(ctx: OpContext, value: float, like: Expr) -> Expr:
    return ctx.const(value, ctx.dtype(like))


@converter("relu")
def _relu(ctx: OpContext) -> Expr:
    return nn.relu(ctx.input("x"))


@converter("relu6")
def _relu6(ctx: OpContext) -> Expr:
    return op.clip(ctx.input("x"), 0.0, float(ctx.attr("threshold", default=6.0)))


@converter("gelu")
def _gelu(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    if bool(ctx.attr("approximate", default=False)):
        inner = op.multiply(
            _scalar(ctx, math.sqrt(2.0 / math.pi), x),
            op.add(x, op.multiply(_scalar(ctx, 0.044715, x), op.power(x, _scalar(ctx, 3.0, x)))),
        )
        half = op.multiply(_scalar(ctx, 0.5, x), x)
        return op.multiply(half, op.add(_scalar(ctx, 1.0, x), op.tanh(inner)))
    erf = op.erf(op.multiply(x, _scalar(ctx, 1.0 / math.sqrt(2.0), x)))
    return op.multiply(op.multiply(x, _scalar(ctx, 0.5, x)), op.add(_scalar(ctx, 1.0, x), erf))


@converter("hardswish")
def _hardswish(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    threshold = float(ctx.attr("threshold", default=6.0))
    scale = float(ctx.attr("scale", default=6.0))
    offset = float(ctx.attr("offset", default=3.0))
    gate = op.clip(op.add(x, _scalar(ctx, offset, x)), 0.0, threshold)
    return op.divide(op.multiply(x, gate), _scalar(ctx, scale, x))


@converter("hardsigmoid")
def _hardsigmoid(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    slope = float(ctx.attr("slope", default=0.1666667))
    offset = float(ctx.attr("offset", default=0.5))
    return op.clip(op.add(op.multiply(x, _scalar(ctx, slope, x)), _scalar(ctx, offset, x)), 0, 1)


@converter("leaky_relu")
def _leaky_relu(ctx: OpContext) -> Expr:
    alpha = float(ctx.attr("negative_slope", "alpha", default=0.02))
    return nn.leaky_relu(ctx.input("x"), alpha)


@converter("swish", "silu")
def _swish(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    beta = float(ctx.attr("beta", default=1.0))
    inner = x if beta == 1.0 else op.multiply(x, _scalar(ctx, beta, x))
    return op.multiply(x, op.sigmoid(inner))


@converter("elu")
def _elu(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    alpha = _scalar(ctx, float(ctx.attr("alpha", default=1.0)), x)
    neg = op.multiply(alpha, op.subtract(op.exp(x), _scalar(ctx, 1.0, x)))
    return op.where(op.greater(x, _scalar(ctx, 0.0, x)), x, neg)


@converter("softplus")
def _softplus(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    beta = float(ctx.attr("beta", default=1.0))
    threshold = float(ctx.attr("threshold", default=20.0))
    bx = op.multiply(x, _scalar(ctx, beta, x))
    soft = op.divide(op.log(op.add(op.exp(bx), _scalar(ctx, 1.0, x))), _scalar(ctx, beta, x))
    return op.where(op.greater(bx, _scalar(ctx, threshold, x)), x, soft)


@converter("mish")
def _mish(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    soft = op.log(op.add(op.exp(x), _scalar(ctx, 1.0, x)))
    return op.multiply(x, op.tanh(soft))


@converter("prelu")
def _prelu(ctx: OpContext) -> Expr:
    x, alpha = ctx.input("x"), ctx.input("alpha")
    mode = str(ctx.attr("mode", default="all"))
    shape = ctx.shape(x)
    if mode == "all":
        alpha = op.reshape(alpha, [])
    elif mode == "channel":
        nhwc = str(ctx.attr("data_format", default="NCHW")) in ("NHWC", "NLC", "NDHWC")
        axis = len(shape) - 1 if nhwc else 1
        alpha = op.reshape(alpha, [-1] + [1] * (len(shape) - 1 - axis))
    else:  # "element": one slope per element of a sample
        alpha = op.reshape(alpha, list(shape[1:]))
    neg = op.multiply(alpha, x)
    return op.where(op.greater(x, _scalar(ctx, 0.0, x)), x, neg)


@converter("square")
def _square(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    return op.multiply(x, x)


@converter("reciprocal")
def _reciprocal(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    return op.divide(_scalar(ctx, 1.0, x), x)


@converter("logsigmoid")
def _logsigmoid(ctx: OpContext) -> Expr:
    return op.log(op.sigmoid(ctx.input("x")))


# -- shrinking and clamping activations -----------------------------------------------------
def _where_greater(ctx: OpContext, x: Expr, threshold: float, then: Expr, other: Expr) -> Expr:
    return op.where(op.greater(x, _scalar(ctx, threshold, x)), then, other)


@converter("hardshrink")
def _hardshrink(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    t = float(ctx.attr("threshold", default=0.5))
    return _where_greater(ctx, op.abs(x), t, x, op.zeros_like(x))


@converter("softshrink")
def _softshrink(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    t = float(ctx.attr("threshold", "lambda", default=0.5))
    low = op.where(op.less(x, _scalar(ctx, -t, x)), op.add(x, _scalar(ctx, t, x)), op.zeros_like(x))
    return _where_greater(ctx, x, t, op.subtract(x, _scalar(ctx, t, x)), low)


@converter("tanh_shrink")
def _tanh_shrink(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    return op.subtract(x, op.tanh(x))


@converter("thresholded_relu")
def _thresholded_relu(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    t = float(ctx.attr("threshold", default=1.0))
    fill = _scalar(ctx, float(ctx.attr("value", default=0.0)), x)
    return _where_greater(ctx, x, t, x, op.multiply(op.ones_like(x), fill))


@converter("selu")
def _selu(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    alpha = _scalar(ctx, float(ctx.attr("alpha", default=1.6732632423543772)), x)
    scale = _scalar(ctx, float(ctx.attr("scale", default=1.0507009873554805)), x)
    neg = op.multiply(alpha, op.subtract(op.exp(x), _scalar(ctx, 1.0, x)))
    return op.multiply(scale, _where_greater(ctx, x, 0.0, x, neg))


@converter("softsign")
def _softsign(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    return op.divide(x, op.add(_scalar(ctx, 1.0, x), op.abs(x)))


@converter("hardtanh", "brelu")
def _hardtanh(ctx: OpContext) -> Expr:
    lo, hi = float(ctx.attr("t_min", default=-1.0)), float(ctx.attr("t_max", default=1.0))
    return op.clip(ctx.input("x"), lo, hi)
