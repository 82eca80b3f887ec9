"""Converters of Core ML's rank-N layers (spec version 4 and later: what coremltools
writes when it converts a PyTorch or TensorFlow model with
``convert_to="neuralnetwork"``): static reshapes, transposes, squeeze/expand,
slices, N-d concat/split/stack, softmax and reductions over given axes, matrix
products, layer normalisation, GELU, constant padding, gathers, tiles, arg-max/min,
comparisons and logical layers (which give 0/1 floats, as Core ML's do).

These layers see the tensor with all its axes (batch included), as Core ML does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Constant, Expr, const
from relaykit.op import nn

from .registry import Converter, LayerContext, converter, weights

__all__: list[str] = []


def _axes(p: Any) -> list[int]:
    return [int(a) for a in p.axes]


@converter("reshapeStatic")
def _reshape_static(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    return op.reshape(inputs[0], [int(d) for d in p.targetShape])


@converter("rankPreservingReshape")
def _rank_preserving_reshape(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    shape = ctx.shape(inputs[0])
    target = [shape[i] if d == 0 else int(d) for i, d in enumerate(p.targetShape)]
    return op.reshape(inputs[0], target)


@converter("flattenTo2D")
def _flatten_to_2d(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    shape = ctx.shape(inputs[0])
    axis = int(p.axis) % (len(shape) + 1) if p.axis < 0 else int(p.axis)
    return op.reshape(inputs[0], [math.prod(shape[:axis]), math.prod(shape[axis:])])


converter("softmaxND")(lambda ctx, p, inputs: nn.softmax(inputs[0], axis=int(p.axis)))
converter("transpose")(lambda ctx, p, inputs: op.transpose(inputs[0], _axes(p)))
converter("expandDims")(lambda ctx, p, inputs: _expand_dims(inputs[0], _axes(p), ctx))
converter("copy")(lambda ctx, p, inputs: inputs[0])


def _expand_dims(x: Expr, axes: list[int], ctx: LayerContext) -> Expr:
    rank = len(ctx.shape(x)) + len(axes)
    shape = list(ctx.shape(x))
    for axis in sorted(a % rank for a in axes):
        shape.insert(axis, 1)
    return op.reshape(x, shape)


@converter("squeeze")
def _squeeze(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    shape = ctx.shape(inputs[0])
    if p.squeezeAll:
        kept = [d for d in shape if d != 1]
    else:
        drop = {a % len(shape) for a in _axes(p)}
        kept = [d for i, d in enumerate(shape) if i not in drop]
    return op.reshape(inputs[0], kept or [1])


@converter("sliceStatic")
def _slice_static(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    shape = ctx.shape(x)
    begin, end = [int(v) for v in p.beginIds], [int(v) for v in p.endIds]
    strides = [int(v) for v in p.strides] or [1] * len(shape)
    for i, dim in enumerate(shape):
        if p.beginMasks and p.beginMasks[i]:
            begin[i] = 0 if strides[i] > 0 else dim - 1
        if p.endMasks and p.endMasks[i]:
            end[i] = dim if strides[i] > 0 else -dim - 1
    out = op.strided_slice(x, begin=begin, end=end, strides=strides)
    squeeze = [i for i, s in enumerate(p.squeezeMasks) if s]
    if squeeze:
        out = op.squeeze(out, axis=squeeze)
    return out


@converter("concatND")
def _concat_nd(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    if p.interleave:
        raise ctx.fail("interleaved concatenation is not supported")
    return op.concatenate(inputs, axis=int(p.axis))


@converter("splitND")
def _split_nd(ctx: LayerContext, p: Any, inputs: list[Expr]) -> list[Expr]:
    axis = int(p.axis)
    sizes = [int(s) for s in p.splitSizes]
    if sizes:
        points = list(np.cumsum(sizes)[:-1])
        pieces = op.split(inputs[0], [int(v) for v in points], axis=axis)
        count = len(sizes)
    else:
        count = int(p.numSplits)
        pieces = op.split(inputs[0], count, axis=axis)
    return [pieces[i] for i in range(count)]


converter("stack")(lambda ctx, p, inputs: op.stack(inputs, axis=int(p.axis)))
converter("tile")(lambda ctx, p, inputs: op.tile(inputs[0], [int(r) for r in p.reps]))


@converter("gather")
def _gather(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    data, index = inputs
    return op.take(data, op.cast(index, "int32"), axis=int(p.axis), mode="fast")


def _arg(fn: Callable[..., Expr]) -> Converter:
    def convert(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
        out = fn(inputs[0], axis=[int(p.axis)], keepdims=not p.removeDim)
        return op.cast(out, "float32")

    return convert


converter("argMax")(_arg(op.argmax))
converter("argMin")(_arg(op.argmin))


def _reduce(fn: Callable[[Expr, list[int] | None], Expr]) -> Converter:
    def convert(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
        x = inputs[0]
        rank = len(ctx.shape(x))
        axes = list(range(rank)) if p.reduceAll else [a % rank for a in _axes(p)]
        out = fn(x, axes)
        if not p.keepDims:
            return out
        shape = [1 if i in axes else d for i, d in enumerate(ctx.shape(x))]
        return op.reshape(out, shape)

    return convert


_REDUCERS: dict[str, Callable[[Expr, list[int] | None], Expr]] = {
    "reduceSum": lambda x, a: op.sum(x, axis=a),
    "reduceMean": lambda x, a: op.mean(x, axis=a),
    "reduceProd": lambda x, a: op.prod(x, axis=a),
    "reduceMax": lambda x, a: op.max(x, axis=a),
    "reduceMin": lambda x, a: op.min(x, axis=a),
    "reduceL1": lambda x, a: op.sum(op.abs(x), axis=a),
    "reduceL2": lambda x, a: op.sqrt(op.sum(op.multiply(x, x), axis=a)),
    "reduceSumSquare": lambda x, a: op.sum(op.multiply(x, x), axis=a),
    "reduceLogSum": lambda x, a: op.log(op.sum(x, axis=a)),
    "reduceLogSumExp": lambda x, a: op.logsumexp(x, axis=a),
}
for _name, _fn in _REDUCERS.items():
    converter(_name)(_reduce(_fn))


def _matmul(ctx: LayerContext, a: Expr, b: Expr) -> Expr:
    """NumPy's ``a @ b`` (batch axes broadcast)."""
    sa, sb = ctx.shape(a), ctx.shape(b)
    if len(sb) == 2:  # weights: one dense over the flattened leading axes
        flat = op.reshape(a, [-1, sa[-1]])
        out = nn.dense(flat, op.transpose(b, [1, 0]))
        return op.reshape(out, [*sa[:-1], sb[-1]])
    batch = list(np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])))
    a = op.broadcast_to(a, [*batch, *sa[-2:]]) if list(sa[:-2]) != batch else a
    b = op.broadcast_to(b, [*batch, *sb[-2:]]) if list(sb[:-2]) != batch else b
    n = math.prod(batch)
    out = nn.batch_matmul(
        op.reshape(a, [n, sa[-2], sa[-1]]), op.reshape(b, [n, sb[-2], sb[-1]]), transpose_b=False
    )
    return op.reshape(out, [*batch, sa[-2], sb[-1]])


def _last_two_swapped(ctx: LayerContext, x: Expr) -> Expr:
    rank = len(ctx.shape(x))
    return op.transpose(x, [*range(rank - 2), rank - 1, rank - 2])


@converter("batchedMatmul")
def _batched_matmul(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    a = inputs[0]
    if len(ctx.shape(a)) < 2:
        raise ctx.fail("the first input must have rank 2 or more")
    if p.transposeA:
        a = _last_two_swapped(ctx, a)
    if len(inputs) == 2:
        b = inputs[1]
        if p.transposeB:
            b = _last_two_swapped(ctx, b)
        return _matmul(ctx, a, b)
    rows, cols = int(p.weightMatrixFirstDimension), int(p.weightMatrixSecondDimension)
    w = ctx.param("weight", weights(ctx, p.weights, "weights"), [rows, cols])
    out = _matmul(ctx, a, w)
    if p.hasBias:
        out = op.add(out, ctx.param("bias", weights(ctx, p.bias, "bias"), [cols]))
    return out


@converter("layerNormalization")
def _layer_norm(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    norm_shape = [int(d) for d in p.normalizedShape]
    gamma = weights(ctx, p.gamma, "gamma").reshape(norm_shape)
    beta = weights(ctx, p.beta, "beta").reshape(norm_shape)
    if len(norm_shape) == 1:
        g, b = ctx.param("gamma", gamma), ctx.param("beta", beta)
        return nn.layer_norm(x, g, b, axis=-1, epsilon=float(p.eps))
    rank = len(ctx.shape(x))
    axes = list(range(rank - len(norm_shape), rank))
    mean = op.mean(x, axis=axes, keepdims=True)
    centred = op.subtract(x, mean)
    var = op.mean(op.multiply(centred, centred), axis=axes, keepdims=True)
    norm = op.divide(centred, op.sqrt(op.add(var, ctx.scalar(p.eps))))
    return op.add(op.multiply(norm, ctx.param("gamma", gamma)), ctx.param("beta", beta))


@converter("gelu")
def _gelu(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x, s = inputs[0], ctx.scalar
    if p.mode == 0:
        return nn.gelu(x)
    if p.mode == 1:  # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
        inner = op.multiply(
            s(math.sqrt(2 / math.pi)), op.add(x, op.multiply(s(0.044715), op.power(x, s(3.0))))
        )
        return op.multiply(op.multiply(s(0.5), x), op.add(s(1.0), op.tanh(inner)))
    return op.multiply(x, op.sigmoid(op.multiply(s(1.702), x)))


@converter("clampedReLU")
def _clamped_relu(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x, s = inputs[0], ctx.scalar
    leaky = op.where(op.greater_equal(x, s(0.0)), x, op.multiply(s(p.alpha), x))
    return op.minimum(leaky, s(p.beta))


@converter("constantPad")
def _constant_pad(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    shape = ctx.shape(x)
    amounts = [int(v) for v in p.padAmounts]
    pairs = [(amounts[2 * i], amounts[2 * i + 1]) for i in range(len(amounts) // 2)]
    if p.padToGivenOutputSizeMode:
        pairs = [(0, max(want - have, 0) if want else 0) for (_, want), have in zip(
            pairs, shape[-len(pairs):], strict=True)]  # fmt: skip
    pad_width = [(0, 0)] * (len(shape) - len(pairs)) + pairs
    return nn.pad(x, pad_width, pad_value=float(p.value))


@converter("loadConstantND")
def _load_constant_nd(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    return ctx.param("data", weights(ctx, p.data, "data"), [int(d) for d in p.shape])


@converter("fillStatic")
def _fill_static(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    shape = [int(d) for d in p.targetShape]
    return op.full(ctx.scalar(p.value), shape, "float32")


converter("fillLike")(lambda ctx, p, inputs: op.full_like(inputs[0], LayerContext.scalar(p.value)))


def _as_float(x: Expr) -> Expr:
    return op.cast(x, "float32")


def _compare(fn: Callable[[Expr, Expr], Expr]) -> Converter:
    def convert(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
        other = inputs[1] if len(inputs) > 1 else ctx.scalar(p.alpha)
        return _as_float(fn(inputs[0], other))

    return convert


_COMPARISONS: dict[str, Callable[[Expr, Expr], Expr]] = {
    "equal": op.equal,
    "notEqual": op.not_equal,
    "lessThan": op.less,
    "lessEqual": op.less_equal,
    "greaterThan": op.greater,
    "greaterEqual": op.greater_equal,
}
for _name, _cmp in _COMPARISONS.items():
    converter(_name)(_compare(_cmp))


def _truth(x: Expr) -> Expr:
    return op.not_equal(x, LayerContext.scalar(0.0))


def _logical(fn: Callable[[Expr, Expr], Expr]) -> Converter:
    def convert(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
        out = _truth(inputs[0])
        for other in inputs[1:]:
            out = fn(out, _truth(other))
        return _as_float(out)

    return convert


converter("logicalAnd")(_logical(op.logical_and))
converter("logicalOr")(_logical(op.logical_or))
converter("logicalXor")(_logical(op.logical_xor))
converter("logicalNot")(lambda ctx, p, inputs: _as_float(op.logical_not(_truth(inputs[0]))))


@converter("whereBroadcastable")
def _where(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    cond, a, b = inputs
    return op.where(_truth(cond), a, b)


@converter("sliceBySize")
def _slice_by_size(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x, start = inputs
    if not isinstance(start, Constant):
        raise ctx.fail("the start must be a constant (a loadConstantND before the layer)")
    first = int(np.asarray(start.data.numpy()).reshape(-1)[0])
    shape = ctx.shape(x)
    axis = int(p.axis) % len(shape)
    begin, end = [0] * len(shape), list(shape)
    begin[axis] = first
    end[axis] = shape[axis] if p.size < 0 else first + int(p.size)
    return op.strided_slice(x, begin=begin, end=end)


converter("broadcastToStatic")(
    lambda ctx, p, inputs: op.broadcast_to(inputs[0], [int(d) for d in p.targetShape])
)
converter("broadcastToLike")(
    lambda ctx, p, inputs: op.broadcast_to(inputs[0], list(ctx.shape(inputs[1])))
)
converter("reshapeLike")(lambda ctx, p, inputs: op.reshape(inputs[0], list(ctx.shape(inputs[1]))))
converter("getShape")(
    lambda ctx, p, inputs: const(np.asarray(ctx.shape(inputs[0]), dtype=np.float32))
)
converter("reverse")(
    lambda ctx, p, inputs: _reverse(ctx, inputs[0], [bool(r) for r in p.reverseDim])
)


def _reverse(ctx: LayerContext, x: Expr, dims: list[bool]) -> Expr:
    for axis, flip in enumerate(dims):
        if flip:
            x = op.reverse(x, axis=axis)
    return x


@converter("gatherAlongAxis")
def _gather_along_axis(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    data, index = inputs
    return op.gather(data, int(p.axis), op.cast(index, "int32"))


@converter("embeddingND")
def _embedding_nd(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    """Indices ``[..., 1]`` -> ``[..., embeddingSize]``."""
    x = inputs[0]
    vocab, size = int(p.vocabSize), int(p.embeddingSize)
    table = weights(ctx, p.weights, "weights").reshape(size, vocab).T
    rows = ctx.param("table", table, [vocab, size])
    shape = ctx.shape(x)
    index = op.cast(op.reshape(x, list(shape[:-1]) or [1]), "int32")
    out = op.take(rows, index, axis=0)
    if p.hasBias:
        out = op.add(out, ctx.param("bias", weights(ctx, p.bias, "bias"), [size]))
    return out


@converter("cumSum")
def _cumsum(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    x = inputs[0]
    axis = int(p.axis)
    if p.reverse:
        x = op.reverse(x, axis=axis)
    out = op.cumsum(x, axis=axis, exclusive=bool(p.excludeFinalSum))
    return op.reverse(out, axis=axis) if p.reverse else out


@converter("topK")
def _topk(ctx: LayerContext, p: Any, inputs: list[Expr]) -> list[Expr]:
    """Values and indices (as floats) of the K largest (or smallest) along ``axis``."""
    if len(inputs) > 1:
        raise ctx.fail("K given as a second input is not supported (only the stored K)")
    out = op.topk(inputs[0], k=int(p.K), axis=int(p.axis), is_ascend=bool(p.useBottomK))
    return [out[0], op.cast(out[1], "float32")]


@converter("oneHot")
def _one_hot(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    if len(inputs) > 1:
        raise ctx.fail("the vector size given as a second input is not supported")
    index = op.cast(inputs[0], "int32")
    on, off = ctx.scalar(p.onValue), ctx.scalar(p.offValue)
    return op.one_hot(index, on, off, int(p.oneHotVectorSize), int(p.axis), "float32")


@converter("rangeStatic")
def _range_static(ctx: LayerContext, p: Any, inputs: list[Expr]) -> Expr:
    values = np.arange(p.startValue, p.endValue, p.stepSizeValue, dtype=np.float32)
    return const(values)
