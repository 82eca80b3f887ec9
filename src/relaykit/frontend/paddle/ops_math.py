"""Converters of Paddle's arithmetic: element-wise binary ops (with ProgramDesc's
``axis`` broadcasting), ``scale``, matrix products, reductions, ``cast``, ``clip``,
``pow`` and comparisons."""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .registry import OpContext, converter

__all__: list[str] = []

_BINARY = {
    "add": op.add,
    "subtract": op.subtract,
    "multiply": op.multiply,
    "divide": op.divide,
    "maximum": op.maximum,
    "minimum": op.minimum,
    "elementwise_pow": op.power,
    "floor_divide": op.floor_divide,
    "remainder": op.floor_mod,
    "equal": op.equal,
    "not_equal": op.not_equal,
    "less_than": op.less,
    "less_equal": op.less_equal,
    "greater_than": op.greater,
    "greater_equal": op.greater_equal,
    "logical_and": op.logical_and,
    "logical_or": op.logical_or,
    "logical_xor": op.logical_xor,
}


def _align(ctx: OpContext, x: Expr, y: Expr) -> Expr:
    """ProgramDesc's ``axis``: ``y`` of lower rank lines up with ``x`` from ``axis``."""
    axis = int(ctx.attr("axis", default=-1))
    xr, yr = ctx.ndim(x), ctx.ndim(y)
    if axis == -1 or yr >= xr:
        return y
    axis = axis + xr if axis < 0 else axis
    trailing = xr - axis - yr
    return op.reshape(y, [*ctx.shape(y), *([1] * trailing)]) if trailing > 0 else y


@converter(*_BINARY)
def _binary(ctx: OpContext) -> Expr:
    x, y = ctx.input("x"), ctx.input("y")
    return _BINARY[ctx.type](x, _align(ctx, x, y))


@converter("scale")
def _scale(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    dtype = ctx.dtype(x)
    scale = ctx.values(("scale", "scaletensor"), ("scale",), default=1.0)
    scale = float(scale[0] if isinstance(scale, list) else scale)
    bias = float(ctx.attr("bias", default=0.0))
    s, b = ctx.const(scale, dtype), ctx.const(bias, dtype)
    if bool(ctx.attr("bias_after_scale", default=True)):
        out = x if scale == 1.0 else op.multiply(x, s)
        return out if bias == 0.0 else op.add(out, b)
    shifted = x if bias == 0.0 else op.add(x, b)
    return shifted if scale == 1.0 else op.multiply(shifted, s)


def _matmul(ctx: OpContext, x: Expr, y: Expr, trans_x: bool, trans_y: bool) -> Expr:
    """NumPy ``matmul`` semantics (broadcast batch dims, 1-d operands)."""
    xs, ys = list(ctx.shape(x)), list(ctx.shape(y))
    x_vec, y_vec = len(xs) == 1, len(ys) == 1
    if x_vec:
        x, xs, trans_x = op.reshape(x, [1, xs[0]]), [1, xs[0]], False
    if y_vec:
        y, ys, trans_y = op.reshape(y, [ys[0], 1]), [ys[0], 1], False
    if trans_x:
        perm = [*range(len(xs) - 2), len(xs) - 1, len(xs) - 2]
        x, xs = op.transpose(x, perm), [xs[i] for i in perm]
    if len(ys) == 2:
        weight = y if trans_y else op.transpose(y, [1, 0])
        out = nn.dense(x, weight)
        n = ys[0] if trans_y else ys[1]
        out_shape = [*xs[:-1], n]
    else:
        if trans_y:
            perm = [*range(len(ys) - 2), len(ys) - 1, len(ys) - 2]
            y, ys = op.transpose(y, perm), [ys[i] for i in perm]
        batch = list(np.broadcast_shapes(tuple(xs[:-2]), tuple(ys[:-2])))
        size = int(np.prod(batch)) if batch else 1
        x3 = op.reshape(op.broadcast_to(x, [*batch, *xs[-2:]]), [size, *xs[-2:]])
        y3 = op.reshape(op.broadcast_to(y, [*batch, *ys[-2:]]), [size, *ys[-2:]])
        out = nn.batch_matmul(x3, y3, transpose_b=False)
        out_shape = [*batch, xs[-2], ys[-1]]
        out = op.reshape(out, out_shape)
    if x_vec or y_vec:
        keep = [*out_shape[:-2]] + ([] if x_vec else [out_shape[-2]])
        keep += [] if y_vec else [out_shape[-1]]
        out = op.reshape(out, keep)
    return out


@converter("matmul")
def _matmul_v2(ctx: OpContext) -> Expr:
    trans_x = bool(ctx.attr("transpose_x", "trans_x", default=False))
    trans_y = bool(ctx.attr("transpose_y", "trans_y", default=False))
    return _matmul(ctx, ctx.input("x"), ctx.input("y"), trans_x, trans_y)


@converter("matmul_v1")
def _matmul_v1(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    out = _matmul(
        ctx, x, ctx.input("y"), bool(ctx.attr("transpose_X", default=False)),
        bool(ctx.attr("transpose_Y", default=False)),
    )  # fmt: skip
    alpha = float(ctx.attr("alpha", default=1.0))
    return out if alpha == 1.0 else op.multiply(out, ctx.const(alpha, ctx.dtype(x)))


@converter("mul")
def _mul(ctx: OpContext) -> Expr:
    """The fully-connected ``mul``: both operands flattened to matrices."""
    x, y = ctx.input("x"), ctx.input("y")
    xs, ys = ctx.shape(x), ctx.shape(y)
    xn, yn = int(ctx.attr("x_num_col_dims", default=1)), int(ctx.attr("y_num_col_dims", default=1))
    x2 = op.reshape(x, [int(np.prod(xs[:xn])), int(np.prod(xs[xn:]))])
    y2 = op.reshape(y, [int(np.prod(ys[:yn])), int(np.prod(ys[yn:]))])
    out = nn.dense(x2, op.transpose(y2, [1, 0]))
    return op.reshape(out, [*xs[:xn], *ys[yn:]])


_REDUCE = {"mean": op.mean, "sum": op.sum, "max": op.max, "min": op.min, "prod": op.prod,
           "all": op.all, "any": op.any}  # fmt: skip


@converter(*_REDUCE)
def _reduce(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    n = ctx.ndim(x)
    axes = ctx.values(("axis",), ("axis", "dim"), default=[])
    axes = [axes] if isinstance(axes, (int, float)) else list(axes)
    keep = bool(ctx.attr("keepdim", "keep_dim", default=False))
    if bool(ctx.attr("reduce_all", default=False)) or not axes:
        axes = list(range(n))
    out = _REDUCE[ctx.type](x, [ctx.axis(a, n) for a in axes], keepdims=keep)
    dtype = ctx.attr("dtype", "out_dtype", default=None)
    if dtype is not None and str(dtype) not in ("-1", "DataType.UNDEFINED", "undefined"):
        target = ctx.dtype_name(dtype)
        if target != ctx.dtype(out):
            out = op.cast(out, target)
    return out


@converter("cast")
def _cast(ctx: OpContext) -> Expr:
    return op.cast(ctx.input("x"), ctx.dtype_name(ctx.attr("dtype", "out_dtype")))


@converter("clip")
def _clip(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    bounds: list[Any] = []
    for name, default in (("min", -np.inf), ("max", np.inf)):
        bound = ctx.optional(name)
        if bound is not None and ctx.constant(bound) is None:  # a bound given as an input
            bounds.append(op.reshape(op.cast(bound, ctx.dtype(x)), []))
            continue
        value = ctx.values((name,), (name,), default=default)
        bounds.append(float(value[0] if isinstance(value, list) else value))
    lo, hi = bounds
    if isinstance(lo, float) and isinstance(hi, float):
        return op.clip(x, lo, hi)
    out = x if isinstance(lo, float) and lo == -np.inf else op.maximum(x, ctx.expr(lo, x))
    return out if isinstance(hi, float) and hi == np.inf else op.minimum(out, ctx.expr(hi, x))


@converter("pow")
def _pow(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    factor = ctx.values(("factortensor",), ("y", "factor"), default=1.0)
    factor = float(factor[0] if isinstance(factor, list) else factor)
    return op.power(x, ctx.const(factor, ctx.dtype(x)))


@converter("where")
def _where(ctx: OpContext) -> Expr:
    return op.where(ctx.input("condition"), ctx.input("x"), ctx.input("y"))


def _arg(fn: Any) -> Any:
    def convert(ctx: OpContext) -> Expr:
        x = ctx.input("x")
        axis = ctx.values(("axis",), ("axis",), default=0)
        axis = int(axis[0] if isinstance(axis, list) else axis)
        keep = bool(ctx.attr("keepdims", default=False))
        if bool(ctx.attr("flatten", default=False)):
            x, axis = op.reshape(x, [-1]), 0
        out = fn(x, [ctx.axis(axis, ctx.ndim(x))], keepdims=keep)
        dtype = ctx.attr("dtype", default=None)
        target = ctx.dtype_name(dtype) if dtype is not None and str(dtype) != "-1" else "int64"
        return op.cast(out, target)

    return convert


converter("argmax")(_arg(op.argmax))
converter("argmin")(_arg(op.argmin))


@converter("cumsum")
def _cumsum(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    axis = ctx.values(("axis",), ("axis",), default=-1)
    axis = int(axis[0] if isinstance(axis, list) else axis)
    if bool(ctx.attr("flatten", default=False)):
        x, axis = op.reshape(x, [-1]), 0
    exclusive = bool(ctx.attr("exclusive", default=False))
    if bool(ctx.attr("reverse", default=False)):
        axis = ctx.axis(axis, ctx.ndim(x))
        return op.reverse(op.cumsum(op.reverse(x, axis), axis, exclusive=exclusive), axis)
    return op.cumsum(x, ctx.axis(axis, ctx.ndim(x)), exclusive=exclusive)


def _unary(fn: Any) -> Any:
    def convert(ctx: OpContext) -> Expr:
        return fn(ctx.input("x"))

    return convert


for _name, _fn in {
    "sigmoid": op.sigmoid,
    "tanh": op.tanh,
    "exp": op.exp,
    "log": op.log,
    "sqrt": op.sqrt,
    "rsqrt": op.rsqrt,
    "abs": op.abs,
    "floor": op.floor,
    "ceil": op.ceil,
    "round": op.round,
    "sin": op.sin,
    "cos": op.cos,
    "erf": op.erf,
    "sign": op.sign,
    "logical_not": op.logical_not,
    "tan": op.tan,
    "acos": op.acos,
    "asin": op.asin,
    "atan": op.atan,
    "sinh": op.sinh,
    "cosh": op.cosh,
    "log2": op.log2,
    "log10": op.log10,
    "isinf": op.isinf,
    "isnan": op.isnan,
    "isfinite": op.isfinite,
}.items():
    converter(_name)(_unary(_fn))


@converter("log1p")
def _log1p(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    return op.log(op.add(x, ctx.const(1.0, ctx.dtype(x))))


@converter("logsumexp")
def _logsumexp(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    n = ctx.ndim(x)
    axes = ctx.values(("axis",), ("axis",), default=[])
    axes = [axes] if isinstance(axes, (int, float)) else list(axes)
    if bool(ctx.attr("reduce_all", default=False)) or not axes:
        axes = list(range(n))
    keep = bool(ctx.attr("keepdim", default=False))
    return op.logsumexp(x, [ctx.axis(a, n) for a in axes], keepdims=keep)


@converter("p_norm")
def _p_norm(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    n = ctx.ndim(x)
    p = float(ctx.attr("porder", default=2.0))
    keep = bool(ctx.attr("keepdim", default=False))
    axes = list(range(n)) if bool(ctx.attr("asvector", default=False)) else None
    if axes is None:
        axes = [ctx.axis(ctx.attr("axis", default=-1), n)]
    a = op.abs(x)
    if p == float("inf"):
        return op.max(a, axes, keepdims=keep)
    if p == float("-inf"):
        return op.min(a, axes, keepdims=keep)
    if p == 0:
        nonzero = op.cast(op.not_equal(x, ctx.const(0, ctx.dtype(x))), ctx.dtype(x))
        return op.sum(nonzero, axes, keepdims=keep)
    powered = op.sum(op.power(a, ctx.const(p, ctx.dtype(x))), axes, keepdims=keep)
    return op.power(powered, ctx.const(1.0 / p, ctx.dtype(x)))


@converter("bmm")
def _bmm(ctx: OpContext) -> Expr:
    return _matmul(ctx, ctx.input("x"), ctx.input("y"), False, False)


@converter("dot")
def _dot(ctx: OpContext) -> Expr:
    x, y = ctx.input("x"), ctx.input("y")
    return op.sum(op.multiply(x, y), [ctx.ndim(x) - 1])


@converter("addmm")
def _addmm(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    dtype = ctx.dtype(x)
    alpha = ctx.const(float(ctx.attr("alpha", "Alpha", default=1.0)), dtype)
    beta = ctx.const(float(ctx.attr("beta", "Beta", default=1.0)), dtype)
    prod = _matmul(ctx, x, ctx.input("y"), False, False)
    return op.add(op.multiply(beta, ctx.input("input")), op.multiply(alpha, prod))


@converter("topk")
def _topk(ctx: OpContext) -> dict[str, Expr]:
    x = ctx.input("x")
    k = ctx.values(("k",), ("k",))
    k = int(k[0] if isinstance(k, list) else k)
    axis = ctx.axis(ctx.attr("axis", default=-1), ctx.ndim(x))
    largest = bool(ctx.attr("largest", default=True))
    values, indices = op.topk(x, k, axis, "both", is_ascend=not largest, dtype="int64")
    return {"out": values, "indices": indices}


@converter("expm1")
def _expm1(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    return op.subtract(op.exp(x), ctx.const(1.0, ctx.dtype(x)))


@converter("trunc")
def _trunc(ctx: OpContext) -> Expr:
    return op.trunc(ctx.input("input", "x"))


@converter("mv")
def _mv(ctx: OpContext) -> Expr:
    return _matmul(ctx, ctx.input("x"), ctx.input("vec"), False, False)


@converter("dist")
def _dist(ctx: OpContext) -> Expr:
    x, y = ctx.input("x"), ctx.input("y")
    diff = op.abs(op.subtract(x, y))
    n = len(np.broadcast_shapes(ctx.shape(x), ctx.shape(y)))
    axes = list(range(n))
    p = float(ctx.attr("p", default=2.0))
    dtype = ctx.dtype(x)
    if p == float("inf"):
        return op.max(diff, axes)
    if p == float("-inf"):
        return op.min(diff, axes)
    if p == 0:
        return op.sum(op.cast(op.not_equal(diff, ctx.const(0, dtype)), dtype), axes)
    total = op.sum(op.power(diff, ctx.const(p, dtype)), axes)
    return op.power(total, ctx.const(1.0 / p, dtype))


@converter("argsort")
def _argsort(ctx: OpContext) -> dict[str, Expr]:
    x = ctx.input("x")
    axis = ctx.axis(ctx.attr("axis", default=-1), ctx.ndim(x))
    ascend = not bool(ctx.attr("descending", default=False))
    return {
        "out": op.sort(x, axis, is_ascend=ascend),
        "indices": op.argsort(x, axis, is_ascend=ascend, dtype="int64"),
    }
