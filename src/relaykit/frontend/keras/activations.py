"""Keras activations: the functions a layer's ``activation=`` names, and the
activation layers (``Activation``, ``ReLU``, ``LeakyReLU``, ``PReLU``, ``ELU``,
``Softmax``).

Each function computes what Keras 3 computes: ``hard_sigmoid`` is ``relu6(x + 3) / 6``
(Keras 2's was ``0.2 x + 0.5``), ``gelu`` is the exact (erf) form unless a layer asks
for the tanh approximation, ``leaky_relu``'s default slope is 0.2.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .registry import LayerContext, layer_converter

__all__ = ["ACTIVATIONS", "activation_name", "apply_activation"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _softplus(ctx: LayerContext, x: Expr) -> Expr:
    # log(1 + exp(x)) without overflow: relu(x) + log(1 + exp(-|x|))
    one = ctx.scalar(1.0, x)
    return op.add(nn.relu(x), op.log(op.add(one, op.exp(op.negative(op.abs(x))))))


def _elu(ctx: LayerContext, x: Expr, alpha: float) -> Expr:
    neg = op.multiply(ctx.scalar(alpha, x), op.subtract(op.exp(x), ctx.scalar(1.0, x)))
    return op.where(op.greater(x, ctx.scalar(0.0, x)), x, neg)


def _hard_sigmoid(ctx: LayerContext, x: Expr) -> Expr:
    scaled = op.add(op.divide(x, ctx.scalar(6.0, x)), ctx.scalar(0.5, x))
    return op.clip(scaled, 0.0, 1.0)


def _gelu(ctx: LayerContext, x: Expr, approximate: bool = False) -> Expr:
    half = ctx.scalar(0.5, x)
    one = ctx.scalar(1.0, x)
    if approximate:  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = op.multiply(op.multiply(x, x), x)
        inner = op.add(x, op.multiply(ctx.scalar(0.044715, x), cube))
        inner = op.multiply(ctx.scalar(math.sqrt(2.0 / math.pi), x), inner)
        return op.multiply(op.multiply(half, x), op.add(one, op.tanh(inner)))
    erf = op.erf(op.multiply(x, ctx.scalar(1.0 / math.sqrt(2.0), x)))
    return op.multiply(op.multiply(half, x), op.add(one, erf))


def _celu(ctx: LayerContext, x: Expr, alpha: float = 1.0) -> Expr:
    a = ctx.scalar(alpha, x)
    neg = op.multiply(a, op.subtract(op.exp(op.divide(x, a)), ctx.scalar(1.0, x)))
    return op.add(nn.relu(x), op.minimum(ctx.scalar(0.0, x), neg))


#: Keras activation name -> ``fn(ctx, x)``
ACTIVATIONS: dict[str, Callable[[LayerContext, Expr], Expr]] = {
    "linear": lambda ctx, x: x,
    "relu": lambda ctx, x: nn.relu(x),
    "relu6": lambda ctx, x: op.clip(x, 0.0, 6.0),
    "sigmoid": lambda ctx, x: op.sigmoid(x),
    "tanh": lambda ctx, x: op.tanh(x),
    "softmax": lambda ctx, x: nn.softmax(x, axis=-1),
    "log_softmax": lambda ctx, x: nn.log_softmax(x, axis=-1),
    "softplus": _softplus,
    "softsign": lambda ctx, x: op.divide(x, op.add(ctx.scalar(1.0, x), op.abs(x))),
    "exponential": lambda ctx, x: op.exp(x),
    "elu": lambda ctx, x: _elu(ctx, x, 1.0),
    "selu": lambda ctx, x: op.multiply(ctx.scalar(_SELU_SCALE, x), _elu(ctx, x, _SELU_ALPHA)),
    "celu": _celu,
    "leaky_relu": lambda ctx, x: nn.leaky_relu(x, 0.2),
    "hard_sigmoid": _hard_sigmoid,
    "hard_silu": lambda ctx, x: op.multiply(x, _hard_sigmoid(ctx, x)),
    "hard_swish": lambda ctx, x: op.multiply(x, _hard_sigmoid(ctx, x)),
    "hard_tanh": lambda ctx, x: op.clip(x, -1.0, 1.0),
    "silu": lambda ctx, x: op.multiply(x, op.sigmoid(x)),
    "swish": lambda ctx, x: op.multiply(x, op.sigmoid(x)),
    "gelu": _gelu,
    "mish": lambda ctx, x: op.multiply(x, op.tanh(_softplus(ctx, x))),
    "log_sigmoid": lambda ctx, x: op.negative(_softplus(ctx, op.negative(x))),
    "tanh_shrink": lambda ctx, x: op.subtract(x, op.tanh(x)),
}


def activation_name(fn: Any) -> str:
    """The Keras name of an activation (a function of ``keras.activations``, or a name)."""
    if fn is None:
        return "linear"
    if isinstance(fn, str):
        return fn
    return str(getattr(fn, "__name__", type(fn).__name__))


def apply_activation(ctx: LayerContext, x: Expr, fn: Any) -> Expr:
    """``x`` through the activation ``fn`` (a Keras activation function or name)."""
    name = activation_name(fn)
    convert = ACTIVATIONS.get(name)
    if convert is None:
        raise ctx.fail(
            f"the activation {name!r} is not supported (supported: "
            f"{', '.join(sorted(ACTIVATIONS))}); use one of those or a layer for it"
        )
    return convert(ctx, x)


@layer_converter("Activation")
def _activation(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: dict[str, Any]) -> Expr:
    return apply_activation(ctx, inputs[0], layer.activation)


@layer_converter("ReLU")
def _relu(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: dict[str, Any]) -> Expr:
    # f(x) = max_value for x >= max_value, x for threshold <= x < max_value,
    # negative_slope * (x - threshold) otherwise
    x = inputs[0]
    max_value = ctx.config("max_value")
    slope = float(ctx.config("negative_slope", 0.0) or 0.0)
    threshold = float(ctx.config("threshold", 0.0) or 0.0)
    if slope == 0.0 and threshold == 0.0:
        if max_value is not None:  # ReLU6 and its kin: one clip
            return op.clip(x, 0.0, float(max_value))
        out = nn.relu(x)
    else:
        t = ctx.scalar(threshold, x)
        below = op.multiply(ctx.scalar(slope, x), op.subtract(x, t))
        out = op.where(op.greater_equal(x, t), x, below)
    if max_value is not None:
        out = op.minimum(out, ctx.scalar(float(max_value), x))
    return out


@layer_converter("LeakyReLU")
def _leaky_relu(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: dict[str, Any]) -> Expr:
    slope = ctx.config("negative_slope", ctx.config("alpha", 0.3))
    return nn.leaky_relu(inputs[0], float(slope))


@layer_converter("ELU")
def _elu_layer(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: dict[str, Any]) -> Expr:
    return _elu(ctx, inputs[0], float(ctx.config("alpha", 1.0)))


@layer_converter("PReLU")
def _prelu(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: dict[str, Any]) -> Expr:
    # relu(x) - alpha * relu(-x); alpha has the input's shape without the batch axis,
    # with 1 on the shared axes, so it broadcasts
    x = inputs[0]
    alpha = ctx.weight("alpha")
    return op.subtract(nn.relu(x), op.multiply(alpha, nn.relu(op.negative(x))))


@layer_converter("Softmax")
def _softmax(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: dict[str, Any]) -> Expr:
    x = inputs[0]
    if kwargs.get("mask") is not None or len(inputs) > 1:
        raise ctx.fail("a Softmax with a mask is not supported: apply the mask before it")
    axis = ctx.config("axis", -1)
    if isinstance(axis, (list, tuple)):
        if len(axis) == 1:
            axis = axis[0]
        else:  # softmax over several axes at once
            axes = [int(a) for a in axis]
            shifted = op.subtract(x, op.max(x, axes, keepdims=True))
            e = op.exp(shifted)
            return op.divide(e, op.sum(e, axes, keepdims=True))
    return nn.softmax(x, axis=int(axis))
