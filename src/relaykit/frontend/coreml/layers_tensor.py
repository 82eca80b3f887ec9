"""Converters of Core ML's tensor layers: elementwise merges (add, multiply,
average, max, min, dot), concatenation and splitting, scale and bias, unary
functions and reductions, reshape / flatten / permute, constants, and the
rank-N elementwise layers of later spec versions (``floor``, ``sin``,
``addBroadcastable``...).

Flatten gives ``[N, C*H*W]`` as TVM's importer does (Core ML keeps two unit axes).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce as fold
from typing import Any

from relaykit import op
from relaykit.ir.expr import Expr, const
from relaykit.op import nn

from .registry import Converter, LayerContext, converter, weights

__all__: list[str] = []

_Binary = Callable[[Expr, Expr], Expr]


def _merge(fn: _Binary, inputs: list[Expr]) -> Expr:
    return fold(fn, inputs[1:], inputs[0])


@converter("add")
def _add(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    out = _merge(op.add, inputs)
    return op.add(out, ctx.scalar(p.alpha)) if len(inputs) == 1 or p.alpha else out


@converter("multiply")
def _multiply(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    if len(inputs) == 1:  # one input: scaled by alpha
        return op.multiply(inputs[0], ctx.scalar(p.alpha))
    return _merge(op.multiply, inputs)


@converter("average")
def _average(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    return op.divide(_merge(op.add, inputs), ctx.scalar(len(inputs)))


converter("max")(lambda ctx, p, inputs: _merge(op.maximum, inputs))
converter("min")(lambda ctx, p, inputs: _merge(op.minimum, inputs))


@converter("dot")
def _dot(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    if len(inputs) != 2:
        raise ctx.fail(f"a dot product takes 2 inputs, got {len(inputs)}")
    a, b = inputs
    axis = ctx.channel_axis(a)
    out = op.sum(op.multiply(a, b), axis=axis, keepdims=True)
    if p.cosineSimilarity:
        norm_a = op.sqrt(op.sum(op.multiply(a, a), axis=axis, keepdims=True))
        norm_b = op.sqrt(op.sum(op.multiply(b, b), axis=axis, keepdims=True))
        out = op.divide(out, op.multiply(norm_a, norm_b))
    return out


@converter("concat")
def _concat(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    if p.sequenceConcat:  # the sequence axis: the first of a rank-5 blob, the batch here
        return op.concatenate(inputs, axis=0)
    return op.concatenate(inputs, axis=ctx.channel_axis(inputs[0]))


@converter("split")
def _split(ctx: LayerContext, p: Any, inputs: list[Expr]) -> list[Expr]:
    parts = int(p.nOutputs) or 1
    axis = ctx.channel_axis(inputs[0])
    channels = ctx.shape(inputs[0])[axis]
    if channels % parts:
        raise ctx.fail(f"{channels} channels do not split into {parts} equal parts")
    pieces = op.split(inputs[0], parts, axis=axis)
    return [pieces[i] for i in range(parts)]


def _broadcast_shape(ctx: LayerContext, shape: list[int], what: str) -> list[int]:
    """A Core ML ``[1]`` / ``[C]`` / ``[1, H, W]`` / ``[C, H, W]`` parameter shape as a
    shape that broadcasts over NCHW."""
    if len(shape) == 1:
        return [shape[0], 1, 1]
    if len(shape) == 3:
        return shape
    raise ctx.fail(f"the {what} shape {shape} must be [1], [C], [1, H, W] or [C, H, W]")


@converter("scale")
def _scale(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    shape = _broadcast_shape(ctx, [int(d) for d in p.shapeScale] or [1], "scale")
    out = op.multiply(inputs[0], ctx.param("scale", weights(ctx, p.scale, "scale"), shape))
    if p.hasBias:
        bshape = _broadcast_shape(ctx, [int(d) for d in p.shapeBias] or [1], "bias")
        out = op.add(out, ctx.param("bias", weights(ctx, p.bias, "bias"), bshape))
    return out


@converter("bias")
def _bias(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    shape = _broadcast_shape(ctx, [int(d) for d in p.shape] or [1], "bias")
    return op.add(inputs[0], ctx.param("bias", weights(ctx, p.bias, "bias"), shape))


@converter("unary")
def _unary(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x, s = inputs[0], ctx.scalar
    if p.scale not in (0.0, 1.0):  # an unset scale (0) means 1
        x = op.multiply(x, s(p.scale))
    if p.shift:
        x = op.add(x, s(p.shift))
    kind = p.type
    if kind == p.SQRT:
        return op.sqrt(x)
    if kind == p.RSQRT:
        return op.rsqrt(op.add(x, s(p.epsilon)))
    if kind == p.INVERSE:
        return op.divide(s(1.0), op.add(x, s(p.epsilon)))
    if kind == p.POWER:
        return op.power(x, s(p.alpha))
    if kind == p.EXP:
        return op.exp(x)
    if kind == p.LOG:
        return op.log(x)
    if kind == p.ABS:
        return op.abs(x)
    if kind == p.THRESHOLD:
        return op.maximum(x, s(p.alpha))
    raise ctx.fail(f"unary function {kind} is not supported")


_REDUCE_AXES = {0: [1, 2, 3], 1: [2, 3], 2: [1], 3: [2], 4: [3]}  # CHW, HW, C, H, W


@converter("reduce")
def _reduce(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    rank = len(ctx.shape(x))
    axes = [a - 4 + rank for a in _REDUCE_AXES[int(p.axis)]]
    mode = p.mode
    if mode == p.SUM:
        return op.sum(x, axis=axes, keepdims=True)
    if mode == p.AVG:
        return op.mean(x, axis=axes, keepdims=True)
    if mode == p.PROD:
        return op.prod(x, axis=axes, keepdims=True)
    if mode == p.LOGSUM:
        return op.log(op.sum(x, axis=axes, keepdims=True))
    if mode == p.SUMSQUARE:
        return op.sum(op.multiply(x, x), axis=axes, keepdims=True)
    if mode == p.L1:
        return op.sum(op.abs(x), axis=axes, keepdims=True)
    if mode == p.L2:
        return op.sqrt(op.sum(op.multiply(x, x), axis=axes, keepdims=True))
    if mode == p.MAX:
        return op.max(x, axis=axes, keepdims=True)
    if mode == p.MIN:
        return op.min(x, axis=axes, keepdims=True)
    if mode == p.ARGMAX and len(axes) == 1:
        return op.cast(op.argmax(x, axis=axes, keepdims=True), "float32")
    raise ctx.fail(f"reduce mode {mode} over axis {p.axis} is not supported")


_CHANNEL_LAST = 1


@converter("flatten")
def _flatten(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    if p.mode == _CHANNEL_LAST and len(ctx.shape(x)) == 4:
        x = op.transpose(x, [0, 2, 3, 1])
    return nn.batch_flatten(x)


@converter("reshape")
def _reshape(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    target = [int(d) for d in p.targetShape]
    if len(target) not in (3, 4):
        raise ctx.fail(f"targetShape {target} must be [C, H, W] or [Seq, C, H, W]")
    shape = target if len(target) == 4 else [ctx.shape(x)[0], *target]
    if p.mode != _CHANNEL_LAST:
        return op.reshape(x, shape)
    if len(ctx.shape(x)) == 4:
        x = op.transpose(x, [0, 2, 3, 1])
    hwc = op.reshape(x, [shape[0], shape[2], shape[3], shape[1]])
    return op.transpose(hwc, [0, 3, 1, 2])


@converter("permute")
def _permute(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    axes = [int(a) for a in p.axis]
    rank = len(ctx.shape(inputs[0]))
    if sorted(axes) != list(range(rank)):
        raise ctx.fail(f"axis {axes} is not a permutation of the input's {rank} axes")
    return op.transpose(inputs[0], axes)


@converter("loadConstant")
def _load_constant(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    shape = [int(d) for d in p.shape]
    return ctx.param("data", weights(ctx, p.data, "data"), [1, *shape])


@converter("clip")
def _clip(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    return op.clip(inputs[0], float(p.minVal), float(p.maxVal))


def _elementwise(name: str, fn: Callable[[Expr], Expr]) -> None:
    converter(name)(lambda ctx, p, inputs: fn(inputs[0]))


for _name, _fn in {
    "ceil": op.ceil, "floor": op.floor, "sign": op.sign, "round": op.round,
    "sin": op.sin, "cos": op.cos, "tan": op.tan, "asin": op.asin, "acos": op.acos,
    "atan": op.atan, "sinh": op.sinh, "cosh": op.cosh, "tanh": op.tanh, "asinh": op.asinh,
    "acosh": op.acosh, "atanh": op.atanh, "erf": op.erf,
    "exp2": lambda x: op.power(const(2.0, "float32"), x),
}.items():  # fmt: skip
    _elementwise(_name, _fn)

_BROADCASTABLE: dict[str, _Binary] = {
    "addBroadcastable": op.add,
    "subtractBroadcastable": op.subtract,
    "multiplyBroadcastable": op.multiply,
    "divideBroadcastable": op.divide,
    "maxBroadcastable": op.maximum,
    "minBroadcastable": op.minimum,
    "powBroadcastable": op.power,
    "floorDivBroadcastable": op.floor_divide,
    "modBroadcastable": op.floor_mod,
}


def _broadcastable(fn: _Binary) -> Converter:
    return lambda ctx, p, inputs: _merge(fn, inputs)


for _name, _bin in _BROADCASTABLE.items():
    converter(_name)(_broadcastable(_bin))


@converter("slice")
def _slice(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    """``[startIndex, endIndex)`` with a step along C, H or W (-3, -2, -1); a negative
    index counts from the end (-1 is the last element)."""
    x = inputs[0]
    shape = ctx.shape(x)
    axis = len(shape) - 3 + int(p.axis)
    if axis < 0:
        raise ctx.fail(f"slicing axis {p.axis} needs a rank of at least {3 - int(p.axis)}")
    dim = shape[axis]
    start, end = int(p.startIndex), int(p.endIndex)
    start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
    begin, stop = [0] * len(shape), list(shape)
    begin[axis], stop[axis] = start, min(end, dim)
    steps = [1] * len(shape)
    steps[axis] = int(p.stride) or 1
    return op.strided_slice(x, begin=begin, end=stop, strides=steps)
