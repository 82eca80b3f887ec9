"""Gradients of operators (``FPrimalGradient``), used by ``relay.transform.gradient``.

Each entry is ``grad(call, out_grad) -> [grad of each input]``: ``call`` is the
typed forward call (its inputs and its own value may be reused), ``out_grad`` the
gradient of the output. Broadcasting operators sum their gradients back to each
input's shape with ``collapse_sum_like``. Register more with
``relaykit.op.register_gradient(name, fn)`` (TVM's ``register_gradient``).

>>> from relaykit import relay
>>> from relaykit.ir import get_op
>>> get_op("multiply").get_attr("FPrimalGradient") is not None
True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relaykit.ir.expr import Call, Constant, Expr, Tuple, TupleGetItem
from relaykit.ir.types import TensorType

from . import nn
from .op import register_gradient
from .reduce import sum as _sum
from .shape_like import broadcast_to_like, collapse_sum_like, reshape_like
from .tensor import (
    add,
    cast,
    cos,
    cosh,
    divide,
    exp,
    greater,
    log,
    multiply,
    negative,
    ones_like,
    power,
    sign,
    sin,
    sinh,
    sqrt,
    subtract,
    where,
    zeros_like,
)
from .transform import reshape, split, transpose

__all__ = ["GRADIENTS"]

Grad = Callable[[Call, Expr], list[Expr]]
GRADIENTS: dict[str, Grad] = {}


def _grad(name: str) -> Callable[[Grad], Grad]:
    def deco(fn: Grad) -> Grad:
        GRADIENTS[name] = fn
        register_gradient(name, fn)
        return fn

    return deco


def _ttype(e: Expr) -> TensorType:
    t = e.checked_type
    assert isinstance(t, TensorType)
    return t


def _scalar(value: float, like: Expr) -> Constant:
    return Constant(np.array(value, dtype=_ttype(like).dtype))


# -- elementwise binary (broadcasting) -------------------------------------------------------------


@_grad("add")
def _add_grad(call: Call, g: Expr) -> list[Expr]:
    x, y = call.args
    return [collapse_sum_like(g, x), collapse_sum_like(g, y)]


@_grad("subtract")
def _subtract_grad(call: Call, g: Expr) -> list[Expr]:
    x, y = call.args
    return [collapse_sum_like(g, x), collapse_sum_like(negative(g), y)]


@_grad("multiply")
def _multiply_grad(call: Call, g: Expr) -> list[Expr]:
    x, y = call.args
    return [collapse_sum_like(multiply(g, y), x), collapse_sum_like(multiply(g, x), y)]


@_grad("divide")
def _divide_grad(call: Call, g: Expr) -> list[Expr]:
    x, y = call.args
    return [
        collapse_sum_like(divide(g, y), x),
        collapse_sum_like(negative(multiply(g, divide(call, y))), y),
    ]


# -- elementwise unary -----------------------------------------------------------------------------


@_grad("negative")
def _negative_grad(call: Call, g: Expr) -> list[Expr]:
    return [negative(g)]


@_grad("exp")
def _exp_grad(call: Call, g: Expr) -> list[Expr]:
    return [multiply(g, call)]


@_grad("log")
def _log_grad(call: Call, g: Expr) -> list[Expr]:
    return [divide(g, call.args[0])]


@_grad("sqrt")
def _sqrt_grad(call: Call, g: Expr) -> list[Expr]:
    return [divide(multiply(g, _scalar(0.5, call)), call)]


@_grad("tanh")
def _tanh_grad(call: Call, g: Expr) -> list[Expr]:
    return [multiply(g, subtract(ones_like(call), multiply(call, call)))]


@_grad("sigmoid")
def _sigmoid_grad(call: Call, g: Expr) -> list[Expr]:
    return [multiply(g, multiply(call, subtract(ones_like(call), call)))]


@_grad("abs")
def _abs_grad(call: Call, g: Expr) -> list[Expr]:
    return [multiply(g, sign(call.args[0]))]


def _unary(name: str, dydx: Callable[[Expr, Expr], Expr]) -> None:
    """Register ``d f(x) = g * dydx(x, f(x))`` for the elementwise operator ``name``."""

    def grad(call: Call, g: Expr) -> list[Expr]:
        return [multiply(g, dydx(call.args[0], call))]

    _grad(name)(grad)


def _one(x: Expr) -> Expr:
    return ones_like(x)


def _inv(e: Expr) -> Expr:
    return divide(ones_like(e), e)


_unary("sin", lambda x, y: cos(x))
_unary("cos", lambda x, y: negative(sin(x)))
_unary("tan", lambda x, y: _inv(multiply(cos(x), cos(x))))
_unary("sinh", lambda x, y: cosh(x))
_unary("cosh", lambda x, y: sinh(x))
_unary("atan", lambda x, y: _inv(add(_one(x), multiply(x, x))))
_unary("asin", lambda x, y: _inv(sqrt(subtract(_one(x), multiply(x, x)))))
_unary("acos", lambda x, y: negative(_inv(sqrt(subtract(_one(x), multiply(x, x))))))
_unary("asinh", lambda x, y: _inv(sqrt(add(multiply(x, x), _one(x)))))
_unary("acosh", lambda x, y: _inv(sqrt(subtract(multiply(x, x), _one(x)))))
_unary("atanh", lambda x, y: _inv(subtract(_one(x), multiply(x, x))))
_unary("log2", lambda x, y: _inv(multiply(x, _scalar(float(np.log(2.0)), x))))
_unary("log10", lambda x, y: _inv(multiply(x, _scalar(float(np.log(10.0)), x))))
_unary("rsqrt", lambda x, y: multiply(_scalar(-0.5, x), divide(y, x)))
# d erf(x) = 2 / sqrt(pi) * exp(-x^2)
_TWO_OVER_SQRT_PI = 2.0 / float(np.sqrt(np.pi))
_unary("erf", lambda x, y: multiply(_scalar(_TWO_OVER_SQRT_PI, x), exp(negative(multiply(x, x)))))


@_grad("nn.relu")
def _relu_grad(call: Call, g: Expr) -> list[Expr]:
    x = call.args[0]
    return [where(greater(x, zeros_like(x)), g, zeros_like(g))]


@_grad("copy")
def _copy_grad(call: Call, g: Expr) -> list[Expr]:
    return [g]


@_grad("annotation.checkpoint")
def _checkpoint_grad(call: Call, g: Expr) -> list[Expr]:
    return [g]


def _batch_scale(call: Call, g: Expr) -> Expr:
    x = call.args[0]
    return divide(negative(g), _scalar(float(_ttype(x).shape[0]), x))


@_grad("nn.cross_entropy")
def _cross_entropy_grad(call: Call, g: Expr) -> list[Expr]:
    x, y = call.args
    s = _batch_scale(call, g)
    return [multiply(s, divide(y, x)), multiply(s, log(x))]


@_grad("nn.cross_entropy_with_logits")
def _cross_entropy_logits_grad(call: Call, g: Expr) -> list[Expr]:
    x, y = call.args
    s = _batch_scale(call, g)
    return [multiply(s, y), multiply(s, x)]


@_grad("cast")
def _cast_grad(call: Call, g: Expr) -> list[Expr]:
    return [cast(g, _ttype(call.args[0]).dtype)]


@_grad("zeros_like")
def _zeros_like_grad(call: Call, g: Expr) -> list[Expr]:
    return [zeros_like(call.args[0])]


@_grad("ones_like")
def _ones_like_grad(call: Call, g: Expr) -> list[Expr]:
    return [zeros_like(call.args[0])]


# -- shape operators -------------------------------------------------------------------------------


def _reshape_back(call: Call, g: Expr) -> list[Expr]:
    return [reshape_like(g, call.args[0])]


for _name in ("reshape", "expand_dims", "squeeze", "nn.batch_flatten"):
    _grad(_name)(_reshape_back)


@_grad("reshape_like")
def _reshape_like_grad(call: Call, g: Expr) -> list[Expr]:
    return [reshape_like(g, call.args[0]), zeros_like(call.args[1])]


@_grad("transpose")
def _transpose_grad(call: Call, g: Expr) -> list[Expr]:
    ndim = _ttype(call.args[0]).ndim
    axes = call.attrs.axes
    perm = list(range(ndim))[::-1] if not axes else [a % ndim for a in axes]
    inverse = [0] * ndim
    for i, a in enumerate(perm):
        inverse[a] = i
    return [transpose(g, inverse)]


@_grad("broadcast_to_like")
def _broadcast_to_like_grad(call: Call, g: Expr) -> list[Expr]:
    return [collapse_sum_like(g, call.args[0]), zeros_like(call.args[1])]


@_grad("collapse_sum_like")
def _collapse_sum_like_grad(call: Call, g: Expr) -> list[Expr]:
    return [broadcast_to_like(g, call.args[0]), zeros_like(call.args[1])]


@_grad("concatenate")
def _concatenate_grad(call: Call, g: Expr) -> list[Expr]:
    fields = call.args[0].checked_type.fields  # type: ignore[attr-defined]
    axis = call.attrs.axis % _ttype(call).ndim
    sizes = np.cumsum([f.shape[axis] for f in fields])[:-1].tolist()
    parts = split(g, sizes, axis=axis).astuple() if sizes else Tuple([g])
    return [Tuple([TupleGetItem(parts, i) for i in range(len(fields))])]


# -- reductions ------------------------------------------------------------------------------------


def _reduced_back(call: Call, g: Expr) -> Expr:
    """``g`` (the gradient of a reduction's output) spread over the reduced input."""
    x = call.args[0]
    ndim = _ttype(x).ndim
    axes = call.attrs.axis
    reduced = set(range(ndim)) if axes is None else {a % ndim for a in axes}
    if call.attrs.exclude:
        reduced = set(range(ndim)) - reduced
    if not call.attrs.keepdims:
        kept = tuple(1 if i in reduced else d for i, d in enumerate(_ttype(x).shape))
        g = reshape(g, kept)
    return broadcast_to_like(g, x)


@_grad("sum")
def _sum_grad(call: Call, g: Expr) -> list[Expr]:
    return [_reduced_back(call, g)]


@_grad("mean")
def _mean_grad(call: Call, g: Expr) -> list[Expr]:
    count = int(np.prod(_ttype(call.args[0]).shape)) // max(int(np.prod(_ttype(call).shape)), 1)
    return [divide(_reduced_back(call, g), _scalar(float(count), call))]


# -- nn --------------------------------------------------------------------------------------------


@_grad("nn.dense")
def _dense_grad(call: Call, g: Expr) -> list[Expr]:
    x, w = call.args
    # out = x @ w.T: d x = g @ w, d w = g.T @ x
    return [nn.dense(g, transpose(w, [1, 0])), nn.dense(transpose(g, [1, 0]), transpose(x, [1, 0]))]


@_grad("nn.bias_add")
def _bias_add_grad(call: Call, g: Expr) -> list[Expr]:
    ndim = _ttype(call).ndim
    axis = call.attrs.axis % ndim
    return [g, _sum(g, axis=[axis], exclude=True)]


@_grad("nn.softmax")
def _softmax_grad(call: Call, g: Expr) -> list[Expr]:
    axis = call.attrs.axis
    inner = _sum(multiply(g, call), axis=[axis], keepdims=True)
    return [multiply(subtract(g, inner), call)]


@_grad("nn.log_softmax")
def _log_softmax_grad(call: Call, g: Expr) -> list[Expr]:
    axis = call.attrs.axis
    return [subtract(g, multiply(exp(call), _sum(g, axis=[axis], keepdims=True)))]


@_grad("power")
def _power_grad(call: Call, g: Expr) -> list[Expr]:
    x, y = call.args
    dx = multiply(g, multiply(y, power(x, subtract(y, _scalar(1.0, y)))))
    dy = multiply(g, multiply(call, log(x)))
    return [collapse_sum_like(dx, x), collapse_sum_like(dy, y)]
