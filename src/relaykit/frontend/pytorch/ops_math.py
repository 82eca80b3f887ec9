"""Converters of elementwise aten ops: arithmetic with torch's type promotion,
comparisons, unary math, activations that are elementwise, ``where`` and
``masked_fill``. Arithmetic on Python numbers (TorchScript's size arithmetic)
is done in Python, so shapes stay static.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .registry import OpContext, converter, dtype_name, is_float

__all__ = ["promote", "binary"]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, bool)) and not isinstance(value, Expr)


def promote(ctx: OpContext, a: Any, b: Any) -> tuple[Expr, Expr]:
    """Both operands as expressions of one dtype, following torch's rules: a Python
    number or a 0-d tensor does not widen a tensor of the same kind; floats win over
    integers (an integer tensor with a float number gives the default float dtype)."""
    a_num, b_num = _is_number(a), _is_number(b)
    if a_num and b_num:
        a = ctx.expr(a)
    if b_num or a_num:
        tensor, number = (a, b) if b_num else (b, a)
        tdt = ctx.dtype(tensor)
        if isinstance(number, float) and not is_float(tdt):
            tdt = ctx.default_dtype
            tensor = op.cast(tensor, tdt)
        elif tdt == "bool" and not isinstance(number, bool):
            tdt = "int64"
            tensor = op.cast(tensor, tdt)
        num = ctx.expr(number, tdt)
        return (tensor, num) if b_num else (num, tensor)
    ea, eb = ctx.expr(a), ctx.expr(b)
    da, db = ctx.dtype(ea), ctx.dtype(eb)
    if da == db:
        return ea, eb
    fa, fb = is_float(da), is_float(db)
    if fa != fb:
        target = da if fa else db
    else:
        rank_a, rank_b = ctx.ndim(ea), ctx.ndim(eb)
        if rank_a == 0 and rank_b > 0:
            target = db
        elif rank_b == 0 and rank_a > 0:
            target = da
        else:
            target = _wider(da, db)
    if da != target:
        ea = op.cast(ea, target)
    if db != target:
        eb = op.cast(eb, target)
    return ea, eb


def _wider(a: str, b: str) -> str:
    order = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
    return a if order.index(a) >= order.index(b) else b


def binary(
    relay_fn: Callable[[Expr, Expr], Expr], py_fn: Callable[[Any, Any], Any]
) -> Callable[[OpContext, list[Any]], Any]:
    def convert(ctx: OpContext, args: list[Any]) -> Any:
        a, b = args[0], args[1]
        if _is_number(a) and _is_number(b):
            return py_fn(a, b)
        return relay_fn(*promote(ctx, a, b))

    return convert


_BINARY: list[tuple[tuple[str, ...], Callable[..., Any], Callable[..., Any]]] = [
    (("mul", "multiply", "__mul__", "__rmul__"), op.multiply, operator.mul),
    (("maximum", "max_other"), op.maximum, max),
    (("minimum", "min_other"), op.minimum, min),
    (("eq", "__eq__"), op.equal, operator.eq),
    (("ne", "__ne__"), op.not_equal, operator.ne),
    (("lt", "__lt__"), op.less, operator.lt),
    (("le", "__le__"), op.less_equal, operator.le),
    (("gt", "__gt__"), op.greater, operator.gt),
    (("ge", "__ge__"), op.greater_equal, operator.ge),
    (("remainder",), op.floor_mod, operator.mod),
    (("fmod",), op.trunc_mod, math.fmod),
]
for _names, _relay, _py in _BINARY:
    converter(*_names)(binary(_relay, _py))


def _scaled(ctx: OpContext, value: Any, alpha: Any) -> Any:
    if alpha is None or alpha == 1:
        return value
    if _is_number(value):
        return value * alpha
    return op.multiply(*promote(ctx, value, alpha))


@converter("add", "__add__", "__radd__")
def _add(ctx: OpContext, args: list[Any]) -> Any:
    a, b = args[0], args[1]
    if isinstance(a, str) or isinstance(b, str):
        return str(a) + str(b)
    if isinstance(a, list) and isinstance(b, list):  # TorchScript list concatenation
        return a + b
    b = _scaled(ctx, b, args[2] if len(args) > 2 else None)
    if _is_number(a) and _is_number(b):
        return a + b
    return op.add(*promote(ctx, a, b))


@converter("sub", "subtract", "__sub__")
def _sub(ctx: OpContext, args: list[Any]) -> Any:
    a, b = args[0], _scaled(ctx, args[1], args[2] if len(args) > 2 else None)
    if _is_number(a) and _is_number(b):
        return a - b
    return op.subtract(*promote(ctx, a, b))


@converter("rsub")
def _rsub(ctx: OpContext, args: list[Any]) -> Any:
    return _sub(ctx, [args[1], args[0], *args[2:]])


@converter("div", "true_divide", "__truediv__")
def _div(ctx: OpContext, args: list[Any]) -> Any:
    a, b = args[0], args[1]
    mode = args[2] if len(args) > 2 else None
    if _is_number(a) and _is_number(b):
        if mode == "floor":
            return a // b
        return int(a / b) if mode == "trunc" else a / b
    x, y = promote(ctx, a, b)
    if not is_float(ctx.dtype(x)):
        if mode == "floor":
            return op.floor_divide(x, y)
        x, y = op.cast(x, ctx.default_dtype), op.cast(y, ctx.default_dtype)
        if mode == "trunc":
            return op.cast(op.trunc(op.divide(x, y)), ctx.dtype(promote(ctx, a, b)[0]))
        return op.divide(x, y)
    out = op.divide(x, y)
    if mode == "floor":
        return op.floor(out)
    return op.trunc(out) if mode == "trunc" else out


@converter("floor_divide", "__floordiv__")
def _floor_divide(ctx: OpContext, args: list[Any]) -> Any:
    a, b = args[0], args[1]
    if _is_number(a) and _is_number(b):
        return a // b
    x, y = promote(ctx, a, b)
    return op.floor_divide(x, y)


@converter("pow", "__pow__")
def _pow(ctx: OpContext, args: list[Any]) -> Any:
    a, b = args[0], args[1]
    if _is_number(a) and _is_number(b):
        return a**b
    if b == 2 and isinstance(a, Expr):
        return op.multiply(a, a)
    if b == 0.5 and isinstance(a, Expr):
        return op.sqrt(a)
    return op.power(*promote(ctx, a, b))


def _unary(relay_fn: Callable[[Expr], Expr], py_fn: Callable[[Any], Any] | None = None) -> Any:
    def convert(ctx: OpContext, args: list[Any]) -> Any:
        if py_fn is not None and _is_number(args[0]):
            return py_fn(args[0])
        x = ctx.expr(args[0])
        return relay_fn(x)

    return convert


def _float_unary(relay_fn: Callable[[Expr], Expr]) -> Any:
    """A unary op that gives floats for integer inputs (``sqrt``, ``exp``...)."""

    def convert(ctx: OpContext, args: list[Any]) -> Any:
        x = ctx.expr(args[0])
        if not is_float(ctx.dtype(x)):
            x = op.cast(x, ctx.default_dtype)
        return relay_fn(x)

    return convert


for _names, _fn in [
    (("sqrt",), op.sqrt),
    (("rsqrt",), op.rsqrt),
    (("exp",), op.exp),
    (("log",), op.log),
    (("log2",), op.log2),
    (("sin",), op.sin),
    (("cos",), op.cos),
    (("tan",), op.tan),
    (("tanh",), op.tanh),
    (("sigmoid",), op.sigmoid),
    (("erf",), op.erf),
    (("log10",), op.log10),
    (("sinh",), op.sinh),
    (("cosh",), op.cosh),
    (("asin",), op.asin),
    (("acos",), op.acos),
    (("atan",), op.atan),
    (("asinh",), op.asinh),
    (("acosh",), op.acosh),
    (("atanh",), op.atanh),
    (("log1p",), lambda x: op.log(op.add(x, op.ones_like(x)))),
    (("expm1",), lambda x: op.subtract(op.exp(x), op.ones_like(x))),
    (("reciprocal",), lambda x: op.divide(op.ones_like(x), x)),
]:
    converter(*_names)(_float_unary(_fn))

_UNARY: list[tuple[tuple[str, ...], Callable[..., Any], Callable[..., Any] | None]] = [
    (("neg", "negative", "__neg__"), op.negative, operator.neg),
    (("abs",), op.abs, abs),
    (("floor",), op.floor, math.floor),
    (("ceil",), op.ceil, math.ceil),
    (("round",), op.round, round),
    (("trunc",), op.trunc, math.trunc),
    (("sign",), op.sign, None),
    (("isnan",), op.isnan, math.isnan),
    (("isinf",), op.isinf, math.isinf),
]
for _names, _fn, _pyfn in _UNARY:
    converter(*_names)(_unary(_fn, _pyfn))


@converter("relu")
def _relu(ctx: OpContext, args: list[Any]) -> Expr:
    return nn.relu(ctx.expr(args[0]))


@converter("relu6")
def _relu6(ctx: OpContext, args: list[Any]) -> Expr:
    return op.clip(ctx.expr(args[0]), 0.0, 6.0)


@converter("hardtanh")
def _hardtanh(ctx: OpContext, args: list[Any]) -> Expr:
    lo = -1.0 if len(args) < 2 else float(args[1])
    hi = 1.0 if len(args) < 3 else float(args[2])
    return op.clip(ctx.expr(args[0]), lo, hi)


@converter("clamp", "clip")
def _clamp(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    lo, hi = args[1], args[2] if len(args) > 2 else None
    if isinstance(lo, Expr) or isinstance(hi, Expr):
        out = x
        if lo is not None:
            out = op.maximum(*promote(ctx, out, lo))
        if hi is not None:
            out = op.minimum(*promote(ctx, out, hi))
        return out
    return op.clip(x, -math.inf if lo is None else float(lo), math.inf if hi is None else float(hi))


@converter("clamp_min")
def _clamp_min(ctx: OpContext, args: list[Any]) -> Expr:
    return _clamp(ctx, [args[0], args[1], None])


@converter("clamp_max")
def _clamp_max(ctx: OpContext, args: list[Any]) -> Expr:
    return _clamp(ctx, [args[0], None, args[1]])


@converter("leaky_relu")
def _leaky_relu(ctx: OpContext, args: list[Any]) -> Expr:
    return nn.leaky_relu(ctx.expr(args[0]), float(args[1]) if len(args) > 1 else 0.01)


@converter("gelu")
def _gelu(ctx: OpContext, args: list[Any]) -> Expr:
    """``nn.gelu`` (the exact, erf form); the tanh approximation, which has no operator,
    written out."""
    x = ctx.expr(args[0])
    approximate = args[1] if len(args) > 1 else "none"
    if approximate == "tanh":
        dt = ctx.dtype(x)
        half = ctx.expr(0.5, dt)
        one = ctx.expr(1.0, dt)
        inner = op.multiply(
            ctx.expr(math.sqrt(2.0 / math.pi), dt),
            op.add(x, op.multiply(ctx.expr(0.044715, dt), op.multiply(op.multiply(x, x), x))),
        )
        return op.multiply(op.multiply(half, x), op.add(one, op.tanh(inner)))
    return nn.gelu(x)


@converter("silu")
def _silu(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    return op.multiply(x, op.sigmoid(x))


@converter("hardsigmoid")
def _hardsigmoid(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    dt = ctx.dtype(x)
    return op.divide(op.clip(op.add(x, ctx.expr(3.0, dt)), 0.0, 6.0), ctx.expr(6.0, dt))


@converter("hardswish")
def _hardswish(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    return op.multiply(x, _hardsigmoid(ctx, [x]))


@converter("softplus")
def _softplus(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    dt = ctx.dtype(x)
    beta = float(args[1]) if len(args) > 1 else 1.0
    threshold = float(args[2]) if len(args) > 2 else 20.0
    bx = op.multiply(x, ctx.expr(beta, dt))
    soft = op.divide(op.log(op.add(op.exp(bx), ctx.expr(1.0, dt))), ctx.expr(beta, dt))
    return op.where(op.greater(bx, ctx.expr(threshold, dt)), x, soft)


@converter("elu")
def _elu(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    dt = ctx.dtype(x)
    alpha = float(args[1]) if len(args) > 1 else 1.0
    neg = op.multiply(ctx.expr(alpha, dt), op.subtract(op.exp(x), ctx.expr(1.0, dt)))
    return op.where(op.greater(x, ctx.expr(0.0, dt)), x, neg)


@converter("where")
def _where(ctx: OpContext, args: list[Any]) -> Any:
    if len(args) == 1:  # where(condition): the indices of the nonzero elements, per axis
        return nonzero_columns(ctx, args[0])
    cond = ctx.expr(args[0])
    if ctx.dtype(cond) != "bool":
        cond = op.cast(cond, "bool")
    x, y = promote(ctx, args[1], args[2])
    return op.where(cond, x, y)


@converter("masked_fill")
def _masked_fill(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    mask = ctx.expr(args[1])
    if ctx.dtype(mask) != "bool":
        mask = op.cast(mask, "bool")
    value = args[2]
    dt = ctx.dtype(x)
    fill = op.cast(value, dt) if isinstance(value, Expr) else ctx.expr(value, dt)
    return op.where(mask, fill, x)


@converter("type_as")
def _type_as(ctx: OpContext, args: list[Any]) -> Expr:
    return op.cast(ctx.expr(args[0]), ctx.dtype(args[1]))


def nonzero(ctx: OpContext, value: Any) -> Expr:
    """``torch.nonzero``: an int64 (n, rank) tensor, n known only at run time (the VM runs it)."""
    return op.cast(op.argwhere(ctx.expr(value)), "int64")


def nonzero_columns(ctx: OpContext, value: Any) -> list[Expr]:
    """``torch.nonzero(as_tuple=True)`` / ``torch.where(cond)``: one index vector per axis."""
    idx = nonzero(ctx, value)
    rank = ctx.ndim(value)
    return [op.squeeze(op.strided_slice(idx, [a], [a + 1], axes=[1]), [1]) for a in range(rank)]


@converter("nonzero")
def _nonzero(ctx: OpContext, args: list[Any]) -> Expr:
    return nonzero(ctx, args[0])


@converter("nonzero_numpy")
def _nonzero_numpy(ctx: OpContext, args: list[Any]) -> list[Expr]:
    return nonzero_columns(ctx, args[0])


@converter("masked_select")
def _masked_select(ctx: OpContext, args: list[Any]) -> Expr:
    """The elements of ``x`` where ``mask`` holds, in order (a 1-d tensor of run-time length)."""
    x, mask = ctx.expr(args[0]), ctx.expr(args[1])
    shape = list(np.broadcast_shapes(ctx.shape(x), ctx.shape(mask)))
    x, mask = op.broadcast_to(x, shape), op.broadcast_to(mask, shape)
    return op.gather_nd(x, op.transpose(nonzero(ctx, mask), [1, 0]))


def cast_to(ctx: OpContext, value: Any, dtype: Any) -> Any:
    name = dtype_name(dtype)
    x = ctx.expr(value)
    if name is None or name == ctx.dtype(x):
        return x
    return op.cast(x, name)
