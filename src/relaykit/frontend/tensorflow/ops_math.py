"""Converters of TensorFlow's element-wise, activation, reduction and matrix-product
ops (``AddV2``, ``Relu6``, ``Mean``, ``MatMul``, ``BatchMatMulV2``, ``Softmax``...)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr, const
from relaykit.op import nn

from .registry import NodeContext, converter

__all__: list[str] = []

_BINARY: dict[str, Callable[[Expr, Expr], Expr]] = {
    "Add": op.add,
    "AddV2": op.add,
    "Sub": op.subtract,
    "Mul": op.multiply,
    "RealDiv": op.divide,
    "Div": op.divide,
    "FloorDiv": op.floor_divide,
    "FloorMod": op.floor_mod,
    "TruncateDiv": op.trunc_divide,
    "Mod": op.trunc_mod,
    "TruncateMod": op.trunc_mod,
    "Maximum": op.maximum,
    "Minimum": op.minimum,
    "Pow": op.power,
    "Greater": op.greater,
    "GreaterEqual": op.greater_equal,
    "Less": op.less,
    "LessEqual": op.less_equal,
    "Equal": op.equal,
    "NotEqual": op.not_equal,
    "LogicalAnd": op.logical_and,
    "LogicalOr": op.logical_or,
}

_UNARY: dict[str, Callable[[Expr], Expr]] = {
    "Rsqrt": op.rsqrt,
    "Sqrt": op.sqrt,
    "Exp": op.exp,
    "Log": op.log,
    "Tanh": op.tanh,
    "Sigmoid": op.sigmoid,
    "Relu": nn.relu,
    "Neg": op.negative,
    "Abs": op.abs,
    "Floor": op.floor,
    "Ceil": op.ceil,
    "Sin": op.sin,
    "Cos": op.cos,
    "Tan": op.tan,
    "Atan": op.atan,
    "Erf": op.erf,
    "Sign": op.sign,
    "LogicalNot": op.logical_not,
    "IsNan": op.isnan,
}


def _binary(ctx: NodeContext) -> Expr:
    a, b = ctx.inputs[0], ctx.inputs[1]
    return _BINARY[ctx.op](a, b)


def _unary(ctx: NodeContext) -> Expr:
    return _UNARY[ctx.op](ctx.inputs[0])


for _name in _BINARY:
    converter(_name)(_binary)
for _name in _UNARY:
    converter(_name)(_unary)


def _scalar(ctx: NodeContext, value: float, i: int = 0) -> Expr:
    return const(np.array(value, dtype=ctx.dtype(i)))


@converter("SquaredDifference")
def _squared_difference(ctx: NodeContext) -> Expr:
    d = op.subtract(ctx.inputs[0], ctx.inputs[1])
    return op.multiply(d, d)


@converter("Square")
def _square(ctx: NodeContext) -> Expr:
    return op.multiply(ctx.inputs[0], ctx.inputs[0])


@converter("Reciprocal", "Inv")
def _reciprocal(ctx: NodeContext) -> Expr:
    return op.divide(_scalar(ctx, 1.0), ctx.inputs[0])


@converter("Erfc")
def _erfc(ctx: NodeContext) -> Expr:
    return op.subtract(_scalar(ctx, 1.0), op.erf(ctx.inputs[0]))


@converter("Expm1")
def _expm1(ctx: NodeContext) -> Expr:
    return op.subtract(op.exp(ctx.inputs[0]), _scalar(ctx, 1.0))


@converter("Log1p")
def _log1p(ctx: NodeContext) -> Expr:
    return op.log(op.add(ctx.inputs[0], _scalar(ctx, 1.0)))


@converter("Round")
def _round(ctx: NodeContext) -> Expr:
    """Half to even, as TensorFlow rounds (relay's round goes half away from zero)."""
    x = ctx.inputs[0]
    if not ctx.dtype(0).startswith(("float", "bfloat")):
        return x
    f = op.floor(x)
    diff = op.subtract(x, f)
    half = op.add(f, op.floor_mod(f, _scalar(ctx, 2.0)))
    up = op.add(f, _scalar(ctx, 1.0))
    return op.where(
        op.greater(diff, _scalar(ctx, 0.5)), up, op.where(op.less(diff, _scalar(ctx, 0.5)), f, half)
    )


@converter("ClipByValue")
def _clip_by_value(ctx: NodeContext) -> Expr:
    return op.minimum(op.maximum(ctx.inputs[0], ctx.inputs[1]), ctx.inputs[2])


@converter("Cumsum", "Cumprod")
def _cumulative(ctx: NodeContext) -> Expr:
    x = ctx.inputs[0]
    axis = ctx.axis(ctx.ints(1, "the axis")[0], ctx.ndim(0))
    reverse = bool(ctx.attr("reverse", False))
    exclusive = bool(ctx.attr("exclusive", False))
    fn = op.cumsum if ctx.op == "Cumsum" else op.cumprod
    if reverse:
        x = op.reverse(x, axis)
    out = fn(x, axis=axis, exclusive=exclusive)
    return op.reverse(out, axis) if reverse else out


def _fake_quant(ctx: NodeContext, lo: np.ndarray, hi: np.ndarray) -> Expr:
    """TensorFlow's fake quantisation in float: the range nudged so that zero is exact,
    values clamped to it and rounded to the ``2**num_bits`` levels."""
    bits, narrow = int(ctx.attr("num_bits", 8)), bool(ctx.attr("narrow_range", False))
    f32 = np.float32  # the nudging is computed in float32, as TensorFlow does
    qmin, qmax = f32(1.0 if narrow else 0.0), f32(2**bits - 1)
    lo, hi = np.asarray(lo, f32), np.asarray(hi, f32)
    scale = (hi - lo) / (qmax - qmin)
    zero = np.clip(np.floor(qmin - lo / scale + f32(0.5)), qmin, qmax)  # half away from 0
    nlo, nhi = (qmin - zero) * scale, (qmax - zero) * scale
    dtype = ctx.dtype(0)

    def c(v: np.ndarray) -> Expr:
        return const(np.asarray(v, dtype=dtype))

    x = op.minimum(op.maximum(ctx.inputs[0], c(nlo)), c(nhi))
    steps = op.floor(op.add(op.divide(op.subtract(x, c(nlo)), c(scale)), c(np.array(0.5))))
    return op.add(op.multiply(steps, c(scale)), c(nlo))


@converter("FakeQuantWithMinMaxArgs")
def _fake_quant_args(ctx: NodeContext) -> Expr:
    lo, hi = float(ctx.attr("min", -6.0)), float(ctx.attr("max", 6.0))
    return _fake_quant(ctx, np.array(lo), np.array(hi))


@converter("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel")
def _fake_quant_vars(ctx: NodeContext) -> Expr:
    return _fake_quant(ctx, ctx.value(1, "min"), ctx.value(2, "max"))


@converter("Relu6")
def _relu6(ctx: NodeContext) -> Expr:
    return op.clip(ctx.inputs[0], 0.0, 6.0)


@converter("Elu")
def _elu(ctx: NodeContext) -> Expr:
    x = ctx.inputs[0]
    neg = op.subtract(op.exp(x), _scalar(ctx, 1.0))
    return op.where(op.greater(x, _scalar(ctx, 0.0)), x, neg)


@converter("Selu")
def _selu(ctx: NodeContext) -> Expr:
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    x = ctx.inputs[0]
    neg = op.multiply(_scalar(ctx, alpha), op.subtract(op.exp(x), _scalar(ctx, 1.0)))
    return op.multiply(_scalar(ctx, scale), op.where(op.greater(x, _scalar(ctx, 0.0)), x, neg))


@converter("Softplus")
def _softplus(ctx: NodeContext) -> Expr:
    # max(x, 0) + log(1 + exp(-|x|)): no overflow for large |x|
    x = ctx.inputs[0]
    tail = op.log(op.add(_scalar(ctx, 1.0), op.exp(op.negative(op.abs(x)))))
    return op.add(op.maximum(x, _scalar(ctx, 0.0)), tail)


@converter("Softsign")
def _softsign(ctx: NodeContext) -> Expr:
    x = ctx.inputs[0]
    return op.divide(x, op.add(_scalar(ctx, 1.0), op.abs(x)))


@converter("LeakyRelu")
def _leaky_relu(ctx: NodeContext) -> Expr:
    return nn.leaky_relu(ctx.inputs[0], alpha=float(ctx.attr("alpha", 0.2)))


@converter("AddN")
def _add_n(ctx: NodeContext) -> Expr:
    out = ctx.inputs[0]
    for x in ctx.inputs[1:]:
        out = op.add(out, x)
    return out


@converter("Cast")
def _cast(ctx: NodeContext) -> Expr:
    return op.cast(ctx.inputs[0], ctx.attr("DstT"))


# -- reductions ----------------------------------------------------------------------------
_REDUCE: dict[str, Callable[..., Expr]] = {
    "Mean": op.mean,
    "Sum": op.sum,
    "Max": op.max,
    "Min": op.min,
    "Prod": op.prod,
    "All": op.all,
    "Any": op.any,
}


def _reduce(ctx: NodeContext) -> Expr:
    rank = ctx.ndim(0)
    axes = sorted({ctx.axis(a, rank) for a in ctx.ints(1, "the reduction axes")})
    keep = bool(ctx.attr("keep_dims", False))
    if not axes:  # TensorFlow: reducing over no axis is the identity
        return ctx.inputs[0]
    return _REDUCE[ctx.op](ctx.inputs[0], axis=axes, keepdims=keep)


for _name in _REDUCE:
    converter(_name)(_reduce)


def _arg(fn: Callable[..., Expr]) -> Callable[[NodeContext], Expr]:
    def convert(ctx: NodeContext) -> Expr:
        axis = ctx.axis(ctx.ints(1, "the axis")[0], ctx.ndim(0))
        out = fn(ctx.inputs[0], axis=[axis])
        return op.cast(out, ctx.attr("output_type", "int64"))

    return convert


converter("ArgMax")(_arg(op.argmax))
converter("ArgMin")(_arg(op.argmin))


@converter("Softmax")
def _softmax(ctx: NodeContext) -> Expr:
    return nn.softmax(ctx.inputs[0], axis=-1)


@converter("LogSoftmax")
def _log_softmax(ctx: NodeContext) -> Expr:
    return nn.log_softmax(ctx.inputs[0], axis=-1)


# -- matrix products -----------------------------------------------------------------------
@converter("MatMul")
def _matmul(ctx: NodeContext) -> Expr:
    a, b = ctx.inputs[0], ctx.inputs[1]
    ta, tb = bool(ctx.attr("transpose_a", False)), bool(ctx.attr("transpose_b", False))
    if ta:
        a = op.transpose(a, [1, 0])
    if ctx.config.get("use_dense", True):
        weight = b if tb else op.transpose(b, [1, 0])
        return nn.dense(a, weight)
    return nn.matmul(a, b, transpose_b=tb)


@converter("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def _batch_matmul(ctx: NodeContext) -> Expr:
    a, b = ctx.inputs[0], ctx.inputs[1]
    adj_x, adj_y = bool(ctx.attr("adj_x", False)), bool(ctx.attr("adj_y", False))
    sa, sb = ctx.shape(0), ctx.shape(1)
    if len(sa) < 2 or len(sb) < 2:
        raise ctx.fail(f"operands of rank {len(sa)} and {len(sb)}: both need rank 2 or more")
    batch = list(np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])))
    count = int(np.prod(batch)) if batch else 1
    a3 = _as_batch(a, sa, batch, count)
    b3 = _as_batch(b, sb, batch, count)
    out_dtype = ctx.attr("Tout", "") or ""
    if adj_x:
        a3 = op.transpose(a3, [0, 2, 1])
    if ctx.config.get("use_nt_batch_matmul", True):
        if not adj_y:
            b3 = op.transpose(b3, [0, 2, 1])
        out = nn.batch_matmul(a3, b3, out_dtype=out_dtype, transpose_b=True)
    else:
        out = nn.batch_matmul(a3, b3, out_dtype=out_dtype, transpose_a=False, transpose_b=adj_y)
    m = sa[-1] if adj_x else sa[-2]
    n = sb[-2] if adj_y else sb[-1]
    if len(batch) == 1:
        return out
    return op.reshape(out, [*batch, m, n])


def _as_batch(x: Expr, shape: list[int], batch: list[int], count: int) -> Expr:
    if list(shape[:-2]) != batch:
        x = op.broadcast_to(x, [*batch, *shape[-2:]])
    if len(batch) == 1:
        return x
    return op.reshape(x, [count, *shape[-2:]])


@converter("Einsum")
def _einsum(ctx: NodeContext) -> Any:
    return op.einsum(ctx.inputs, ctx.attr("equation"))
