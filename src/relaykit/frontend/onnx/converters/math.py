"""ONNX converters: elementwise math, activations, comparisons, logic and casts."""

from __future__ import annotations

from functools import reduce as _fold
from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.narrow import cast_to
from relaykit.frontend.onnx.proto import onnx_dtype_name
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Expr

from .common import relu_like, round_half_to_even, scalar

__all__: list[str] = []

# -- unary ----------------------------------------------------------------------------------------

_UNARY = {
    "Abs": op.abs,
    "Neg": op.negative,
    "Floor": op.floor,
    "Ceil": op.ceil,
    "Sqrt": op.sqrt,
    "Exp": op.exp,
    "Log": op.log,
    "Tanh": op.tanh,
    "Sigmoid": op.sigmoid,
    "Erf": op.erf,
    "Sin": op.sin,
    "Cos": op.cos,
    "Tan": op.tan,
    "Asin": op.asin,
    "Acos": op.acos,
    "Atan": op.atan,
    "Sinh": op.sinh,
    "Cosh": op.cosh,
    "Asinh": op.asinh,
    "Acosh": op.acosh,
    "Atanh": op.atanh,
    "Sign": op.sign,
    "IsNaN": op.isnan,
    "Not": op.logical_not,
    "BitwiseNot": op.bitwise_not,
}


def _unary_converter(fn: Any):
    def convert(ctx: NodeContext, x: Expr) -> Expr:
        return fn(x)

    return convert


for _name, _fn in _UNARY.items():
    converter(_name, 1)(_unary_converter(_fn))


@converter("Identity", 1)
def _identity(ctx: NodeContext, x: Expr) -> Expr:
    return x


@converter("Reciprocal", 1)
def _reciprocal(ctx: NodeContext, x: Expr) -> Expr:
    return op.divide(scalar(1, ctx.dtype(x)), x)


@converter("Round", 11)
def _round(ctx: NodeContext, x: Expr) -> Expr:
    return round_half_to_even(ctx, x)


@converter("IsInf", 10)
def _isinf(ctx: NodeContext, x: Expr, *, detect_negative: int = 1, detect_positive: int = 1):
    inf = op.isinf(x)
    zero = scalar(0, ctx.dtype(x))
    if detect_negative and detect_positive:
        return inf
    if detect_positive:
        return op.logical_and(inf, op.greater(x, zero))
    if detect_negative:
        return op.logical_and(inf, op.less(x, zero))
    return op.logical_and(inf, op.logical_not(inf))


# -- activations ----------------------------------------------------------------------------------


@converter("Relu", 1)
def _relu(ctx: NodeContext, x: Expr) -> Expr:
    return relu_like(ctx, x)


@converter("LeakyRelu", 1)
def _leaky_relu(ctx: NodeContext, x: Expr, *, alpha: float = 0.01) -> Expr:
    return op.nn.leaky_relu(x, alpha)


@converter("PRelu", 1)
def _prelu(ctx: NodeContext, x: Expr, slope: Expr) -> Expr:
    zero = scalar(0, ctx.dtype(x))
    return op.where(op.less(x, zero), op.multiply(x, slope), x)


def _expm1(x: Expr, dt: str) -> Expr:
    return op.subtract(op.exp(x), scalar(1, dt))


@converter("Elu", 1)
def _elu(ctx: NodeContext, x: Expr, *, alpha: float = 1.0) -> Expr:
    dt = ctx.dtype(x)
    neg = op.multiply(scalar(alpha, dt), _expm1(x, dt))
    return op.where(op.greater(x, scalar(0, dt)), x, neg)


@converter("Selu", 1)
def _selu(ctx: NodeContext, x: Expr, *, alpha: float = 1.67326, gamma: float = 1.0507) -> Expr:
    dt = ctx.dtype(x)
    neg = op.multiply(scalar(alpha, dt), _expm1(x, dt))
    return op.multiply(scalar(gamma, dt), op.where(op.greater(x, scalar(0, dt)), x, neg))


@converter("Celu", 12)
def _celu(ctx: NodeContext, x: Expr, *, alpha: float = 1.0) -> Expr:
    dt = ctx.dtype(x)
    a = scalar(alpha, dt)
    neg = op.multiply(a, _expm1(op.divide(x, a), dt))
    return op.add(relu_like(ctx, x), op.minimum(scalar(0, dt), neg))


@converter("ThresholdedRelu", 10)
def _thresholded_relu(ctx: NodeContext, x: Expr, *, alpha: float = 1.0) -> Expr:
    dt = ctx.dtype(x)
    return op.where(op.greater(x, scalar(alpha, dt)), x, scalar(0, dt))


@converter("HardSigmoid", 1)
def _hard_sigmoid(ctx: NodeContext, x: Expr, *, alpha: float = 0.2, beta: float = 0.5) -> Expr:
    dt = ctx.dtype(x)
    lin = op.add(op.multiply(x, scalar(alpha, dt)), scalar(beta, dt))
    return op.clip(lin, 0.0, 1.0)


@converter("HardSwish", 14)
def _hard_swish(ctx: NodeContext, x: Expr) -> Expr:
    return op.multiply(x, _hard_sigmoid(ctx, x, alpha=1.0 / 6, beta=0.5))


def _softplus_expr(x: Expr, dt: str) -> Expr:
    return op.log(op.add(op.exp(x), scalar(1, dt)))


@converter("Softplus", 1)
def _softplus(ctx: NodeContext, x: Expr) -> Expr:
    return _softplus_expr(x, ctx.dtype(x))


@converter("Softsign", 1)
def _softsign(ctx: NodeContext, x: Expr) -> Expr:
    return op.divide(x, op.add(op.abs(x), scalar(1, ctx.dtype(x))))


@converter("Mish", 18)
def _mish(ctx: NodeContext, x: Expr) -> Expr:
    return op.multiply(x, op.tanh(_softplus_expr(x, ctx.dtype(x))))


@converter("Swish", 24)
def _swish(ctx: NodeContext, x: Expr, *, alpha: float = 1.0) -> Expr:
    return op.multiply(x, op.sigmoid(op.multiply(x, scalar(alpha, ctx.dtype(x)))))


@converter("Gelu", 20)
def _gelu(ctx: NodeContext, x: Expr, *, approximate: str = "none") -> Expr:
    """``nn.gelu`` (the exact, erf form); the tanh approximation, which has no operator,
    written out."""
    if approximate == "tanh":
        dt = ctx.dtype(x)
        half = scalar(0.5, dt)
        inner = op.multiply(
            scalar(np.sqrt(2 / np.pi), dt),
            op.add(x, op.multiply(scalar(0.044715, dt), op.power(x, scalar(3, dt)))),
        )
        return op.multiply(op.multiply(half, x), op.add(scalar(1, dt), op.tanh(inner)))
    return op.nn.gelu(x)


@converter("Shrink", 9)
def _shrink(ctx: NodeContext, x: Expr, *, bias: float = 0.0, lambd: float = 0.5) -> Expr:
    dt = ctx.dtype(x)
    lo = op.add(x, scalar(bias, dt))
    hi = op.subtract(x, scalar(bias, dt))
    out = op.where(op.greater(x, scalar(lambd, dt)), hi, scalar(0, dt))
    return op.where(op.less(x, scalar(-lambd, dt)), lo, out)


@converter("Clip", 1)
def _clip_v1(ctx: NodeContext, x: Expr, *, min: float = -3.4e38, max: float = 3.4e38) -> Expr:
    return op.clip(x, min, max)


@converter("Clip", 11)
def _clip(ctx: NodeContext, x: Expr, lo: Expr | None = None, hi: Expr | None = None) -> Expr:
    out = x
    if lo is not None:
        out = op.maximum(out, lo)
    if hi is not None:
        out = op.minimum(out, hi)
    return out


# -- binary ---------------------------------------------------------------------------------------

_BINARY = {
    "Add": op.add,
    "Sub": op.subtract,
    "Mul": op.multiply,
    "And": op.logical_and,
    "Or": op.logical_or,
    "Xor": op.logical_xor,
    "Equal": op.equal,
    "Less": op.less,
    "LessOrEqual": op.less_equal,
    "Greater": op.greater,
    "GreaterOrEqual": op.greater_equal,
    "BitwiseAnd": op.bitwise_and,
    "BitwiseOr": op.bitwise_or,
    "BitwiseXor": op.bitwise_xor,
}


def _legacy_broadcast(ctx: NodeContext, a: Expr, b: Expr, broadcast: int, axis: Any) -> Expr:
    """Before opset 7, ``broadcast=1, axis=k`` aligned ``b`` at axis ``k`` of ``a``."""
    if not broadcast or axis is None:
        return b
    ra, rb = ctx.ndim(a), ctx.ndim(b)
    axis = axis % ra
    trailing = ra - axis - rb
    return op.reshape(b, ctx.shape(b) + (1,) * trailing) if trailing > 0 else b


def _binary_converter(fn: Any):
    def convert(ctx: NodeContext, a: Expr, b: Expr, *, broadcast: int = 0, axis: Any = None):
        return fn(a, _legacy_broadcast(ctx, a, b, broadcast, axis))

    return convert


for _name, _binary_fn in _BINARY.items():
    converter(_name, 1)(_binary_converter(_binary_fn))


@converter("Div", 1)
def _div(ctx: NodeContext, a: Expr, b: Expr, *, broadcast: int = 0, axis: Any = None) -> Expr:
    return op.divide(a, _legacy_broadcast(ctx, a, b, broadcast, axis))


@converter("Pow", 1)
def _pow(ctx: NodeContext, a: Expr, b: Expr, *, broadcast: int = 0, axis: Any = None) -> Expr:
    b = _legacy_broadcast(ctx, a, b, broadcast, axis)
    dt = ctx.dtype(a)
    if ctx.dtype(b) != dt:
        b = op.cast(b, dt)
    if dt.startswith("float"):
        return op.power(a, b)
    return op.cast(op.power(op.cast(a, "float64"), op.cast(b, "float64")), dt)


@converter("Mod", 10)
def _mod(ctx: NodeContext, a: Expr, b: Expr, *, fmod: int = 0) -> Expr:
    if fmod:
        return op.mod(a, b)
    return op.floor_mod(a, b)


@converter("BitShift", 11)
def _bitshift(ctx: NodeContext, a: Expr, b: Expr, *, direction: str = "") -> Expr:
    if direction == "LEFT":
        return op.left_shift(a, b)
    if direction == "RIGHT":
        return op.right_shift(a, b)
    raise ctx.fail(f"direction must be 'LEFT' or 'RIGHT', got {direction!r}")


def _variadic(fn: Any):
    def convert(ctx: NodeContext, *xs: Expr) -> Expr:
        if not xs:
            raise ctx.fail("needs at least one input")
        return _fold(fn, xs)

    return convert


converter("Sum", 1)(_variadic(op.add))
converter("Max", 1)(_variadic(op.maximum))
converter("Min", 1)(_variadic(op.minimum))


@converter("Mean", 1)
def _mean(ctx: NodeContext, *xs: Expr) -> Expr:
    total = _fold(op.add, xs)
    return op.divide(total, scalar(len(xs), ctx.dtype(xs[0])))


@converter("Where", 9)
def _where(ctx: NodeContext, cond: Expr, x: Expr, y: Expr) -> Expr:
    return op.where(cond, x, y)


# -- casts ----------------------------------------------------------------------------------------


@converter("Cast", 1)
def _cast(ctx: NodeContext, x: Expr, *, to: Any = None, saturate: int = 1, round_mode: str = ""):
    if isinstance(to, str):  # opset 1-5 spelled the type as a string
        to = {"FLOAT": 1, "INT64": 7, "INT32": 6, "BOOL": 9, "DOUBLE": 11}.get(to.upper(), 0)
    dtype = onnx_dtype_name(int(to), ctx.where)
    return cast_to(ctx, x, dtype, saturate, round_mode)


@converter("CastLike", 15)
def _cast_like(ctx: NodeContext, x: Expr, like: Expr, *, saturate: int = 1, round_mode: str = ""):
    return cast_to(ctx, x, ctx.dtype(like), saturate, round_mode)


del _name, _fn, _binary_fn


@converter("BitCast", 26)
def _bitcast(ctx: NodeContext, x: Expr, *, to: int = 0) -> Expr:
    return op.reinterpret(x, onnx_dtype_name(int(to), ctx.where))
