"""Converters of TensorFlow's array ops: shapes and reshapes, slicing (``StridedSlice``
with all its masks), joining and splitting, gathering, ``Fill``/``Range``/``Tile``,
selection, and the pass-through ops (``Identity``, ``StopGradient``, the image
decoders of a graph fed decoded images).

Shapes are static: ``Shape`` of a tensor is a constant, so the shape chains of TF2
graphs fold at import.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Constant, Expr, const

from .registry import NodeContext, converter

__all__: list[str] = []


@converter(
    "Identity",
    "StopGradient",
    "PreventGradient",
    "Snapshot",
    "CheckNumerics",
    "EnsureShape",
    "DecodeJpeg",
    "DecodePng",
    "DecodeImage",
    "DecodeBmp",
)
def _identity(ctx: NodeContext) -> Expr:
    return ctx.inputs[0]


@converter("IdentityN")
def _identity_n(ctx: NodeContext) -> list[Expr]:
    return list(ctx.inputs)


@converter("NoOp")
def _no_op(ctx: NodeContext) -> list[Expr]:
    return []


@converter("Shape")
def _shape(ctx: NodeContext) -> Expr:
    return const(np.array(ctx.shape(0), dtype=ctx.attr("out_type", "int32")))


@converter("Size")
def _size(ctx: NodeContext) -> Expr:
    return const(np.array(int(np.prod(ctx.shape(0))), dtype=ctx.attr("out_type", "int32")))


@converter("Rank")
def _rank(ctx: NodeContext) -> Expr:
    return const(np.array(ctx.ndim(0), dtype="int32"))


@converter("Reshape")
def _reshape(ctx: NodeContext) -> Expr:
    target = ctx.ints(1, "the new shape")
    size = int(np.prod(ctx.shape(0)))
    if target.count(-1) > 1:
        raise ctx.fail(f"the new shape {target} has more than one -1")
    if -1 in target:
        rest = int(np.prod([d for d in target if d != -1]))
        if rest == 0 or size % rest:
            raise ctx.fail(f"cannot reshape {ctx.shape(0)} to {target}")
        target = [size // rest if d == -1 else d for d in target]
    if int(np.prod(target)) != size:
        raise ctx.fail(f"cannot reshape {ctx.shape(0)} to {target}")
    return op.reshape(ctx.inputs[0], target)


@converter("Squeeze")
def _squeeze(ctx: NodeContext) -> Expr:
    rank = ctx.ndim(0)
    dims = ctx.attr("squeeze_dims") or []
    axes = sorted(ctx.axis(a, rank) for a in dims)
    return op.squeeze(ctx.inputs[0], axis=axes or None)


@converter("ExpandDims")
def _expand_dims(ctx: NodeContext) -> Expr:
    rank = ctx.ndim(0)
    axis = ctx.ints(1, "the axis")[0]
    if not -rank - 1 <= axis <= rank:
        raise ctx.fail(f"axis {axis} is out of range for a tensor of rank {rank}")
    return op.expand_dims(ctx.inputs[0], axis if axis >= 0 else axis + rank + 1)


@converter("ConcatV2", "Concat")
def _concat(ctx: NodeContext) -> Expr:
    if ctx.op == "ConcatV2":
        data, axis_at = ctx.inputs[:-1], len(ctx.inputs) - 1
    else:
        data, axis_at = ctx.inputs[1:], 0
    axis = ctx.axis(ctx.ints(axis_at, "the axis")[0], ctx.ndim(1 if axis_at == 0 else 0))
    return op.concatenate(data, axis)


@converter("Pack")
def _pack(ctx: NodeContext) -> Expr:
    rank = ctx.ndim(0) + 1
    return op.stack(ctx.inputs, ctx.axis(ctx.attr("axis", 0), rank))


@converter("Unpack")
def _unpack(ctx: NodeContext) -> list[Expr]:
    shape = ctx.shape(0)
    axis = ctx.axis(ctx.attr("axis", 0), len(shape))
    n = shape[axis]
    if n == 1:
        return [op.squeeze(ctx.inputs[0], axis=[axis])]
    parts = op.split(ctx.inputs[0], n, axis)
    return [op.squeeze(parts[i], axis=[axis]) for i in range(n)]


@converter("Transpose")
def _transpose(ctx: NodeContext) -> Expr:
    return op.transpose(ctx.inputs[0], ctx.ints(1, "the permutation"))


@converter("Split")
def _split(ctx: NodeContext) -> list[Expr]:
    axis = ctx.axis(ctx.ints(0, "the axis")[0], ctx.ndim(1))
    n = int(ctx.attr("num_split", 1))
    if n == 1:
        return [ctx.inputs[1]]
    parts = op.split(ctx.inputs[1], n, axis)
    return [parts[i] for i in range(n)]


@converter("SplitV")
def _split_v(ctx: NodeContext) -> list[Expr]:
    shape = ctx.shape(0)
    axis = ctx.axis(ctx.ints(2, "the axis")[0], len(shape))
    sizes = ctx.ints(1, "the split sizes")
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = shape[axis] - (sum(sizes) + 1)
    if len(sizes) == 1:
        return [ctx.inputs[0]]
    indices = np.cumsum(sizes)[:-1].tolist()
    parts = op.split(ctx.inputs[0], indices, axis)
    return [parts[i] for i in range(len(sizes))]


@converter("Slice")
def _slice(ctx: NodeContext) -> Expr:
    shape = ctx.shape(0)
    begin, size = ctx.ints(1, "begin"), ctx.ints(2, "size")
    end = [s if n == -1 else b + n for b, n, s in zip(begin, size, shape, strict=True)]
    return op.strided_slice(ctx.inputs[0], begin, end)


def _bits(mask: int, i: int) -> bool:
    return bool((int(mask) >> i) & 1)


@converter("StridedSlice")
def _strided_slice(ctx: NodeContext) -> Expr:
    """TensorFlow's slice spec (ellipsis, new axes, shrunk axes, masks) resolved on the
    static shape into one slice per input axis and one final reshape."""
    shape = ctx.shape(0)
    begin, end = ctx.ints(1, "begin"), ctx.ints(2, "end")
    strides = ctx.ints(3, "strides") if len(ctx.inputs) > 3 else [1] * len(begin)
    masks = {
        k: int(ctx.attr(k, 0))
        for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    }
    consumed = sum(
        1
        for i in range(len(begin))
        if not _bits(masks["new_axis_mask"], i) and not _bits(masks["ellipsis_mask"], i)
    )
    out, dim, final = ctx.inputs[0], 0, []
    for i in range(len(begin)):
        if _bits(masks["ellipsis_mask"], i):
            span = len(shape) - consumed
            final.extend(shape[dim : dim + span])
            dim += span
            continue
        if _bits(masks["new_axis_mask"], i):
            final.append(1)
            continue
        if dim >= len(shape):
            raise ctx.fail(f"the slice spec has more axes than the input {shape}")
        n = shape[dim]
        if _bits(masks["shrink_axis_mask"], i):
            idx = begin[i] + n if begin[i] < 0 else begin[i]
            if not 0 <= idx < n:
                raise ctx.fail(f"index {begin[i]} is out of range for axis {dim} of size {n}")
            out = op.strided_slice(out, [idx], [idx + 1], axes=[dim])
        else:
            sl = slice(
                None if _bits(masks["begin_mask"], i) else begin[i],
                None if _bits(masks["end_mask"], i) else end[i],
                strides[i],
            )
            out, length = _slice_axis(out, sl, n, dim)
            final.append(length)
        dim += 1
    final.extend(shape[dim:])
    return op.reshape(out, final)


def _slice_axis(x: Expr, sl: slice, n: int, axis: int) -> tuple[Expr, int]:
    start, stop, step = sl.indices(n)
    idx = range(start, stop, step)
    if step > 0:
        if (start, stop, step) == (0, n, 1):
            return x, n
        return op.strided_slice(x, [start], [max(stop, start)], [step], axes=[axis]), len(idx)
    indices = const(np.array(list(idx), dtype="int64"))
    return op.take(x, indices, axis=axis), len(idx)


@converter("Fill")
def _fill(ctx: NodeContext) -> Expr:
    dims = ctx.ints(0, "the dimensions")
    return op.full(ctx.inputs[1], dims, ctx.dtype(1))


@converter("ZerosLike")
def _zeros_like(ctx: NodeContext) -> Expr:
    return op.zeros_like(ctx.inputs[0])


@converter("OnesLike")
def _ones_like(ctx: NodeContext) -> Expr:
    return op.ones_like(ctx.inputs[0])


@converter("BroadcastTo")
def _broadcast_to(ctx: NodeContext) -> Expr:
    return op.broadcast_to(ctx.inputs[0], ctx.ints(1, "the shape"))


@converter("BroadcastArgs")
def _broadcast_args(ctx: NodeContext) -> Expr:
    shapes = [tuple(ctx.ints(i, f"shape {i}")) for i in range(2)]
    try:
        out = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ctx.fail(f"the shapes {shapes[0]} and {shapes[1]} do not broadcast") from None
    return const(np.array(out, dtype=ctx.dtype(0)))


@converter("GatherV2", "Gather")
def _gather(ctx: NodeContext) -> Expr:
    rank = ctx.ndim(0)
    axis = ctx.axis(ctx.ints(2, "the axis")[0], rank) if ctx.op == "GatherV2" else 0
    batch_dims = int(ctx.attr("batch_dims", 0))
    if batch_dims < 0:
        batch_dims += ctx.ndim(1)
    return op.take(ctx.inputs[0], ctx.inputs[1], axis=axis, batch_dims=batch_dims, mode="fast")


@converter("GatherNd")
def _gather_nd(ctx: NodeContext) -> Expr:
    # TensorFlow's indices lead with the batch; relay's gather_nd wants the index first
    rank = ctx.ndim(1)
    indices = op.transpose(ctx.inputs[1], [rank - 1, *range(rank - 1)])
    return op.gather_nd(ctx.inputs[0], indices)


@converter("Tile")
def _tile(ctx: NodeContext) -> Expr:
    return op.tile(ctx.inputs[0], ctx.ints(1, "the multiples"))


@converter("Range")
def _range(ctx: NodeContext) -> Expr:
    dtype = ctx.attr("Tidx", "int32")
    if all(ctx.is_known(i) for i in range(3)):
        start, limit, delta = (ctx.value(i).item() for i in range(3))
        return const(np.arange(start, limit, delta).astype(dtype))
    return op.arange(ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], dtype=dtype)


@converter("ReverseV2")
def _reverse(ctx: NodeContext) -> Expr:
    out = ctx.inputs[0]
    rank = ctx.ndim(0)
    for a in ctx.ints(1, "the axes"):
        out = op.reverse(out, ctx.axis(a, rank))
    return out


@converter("OneHot")
def _one_hot(ctx: NodeContext) -> Expr:
    depth = ctx.ints(1, "the depth")[0]
    axis = int(ctx.attr("axis", -1))
    return op.one_hot(ctx.inputs[0], ctx.inputs[2], ctx.inputs[3], depth, axis, ctx.dtype(2))


@converter("MatrixBandPart")
def _matrix_band_part(ctx: NodeContext) -> Expr:
    """Keep the band ``-lower <= j - i <= upper`` of the last two axes (negative: all)."""
    shape = ctx.shape(0)
    lower, upper = ctx.ints(1, "num_lower")[0], ctx.ints(2, "num_upper")[0]
    i = np.arange(shape[-2])[:, None]
    j = np.arange(shape[-1])[None, :]
    keep = np.ones((shape[-2], shape[-1]), dtype=bool)
    if lower >= 0:
        keep &= i - j <= lower
    if upper >= 0:
        keep &= j - i <= upper
    x = ctx.inputs[0]
    return op.where(const(keep), x, op.zeros_like(x))


@converter("TopKV2")
def _topk(ctx: NodeContext) -> list[Expr]:
    k = ctx.ints(1, "k")[0]
    out = op.topk(
        ctx.inputs[0], k=k, axis=-1, ret_type="both", dtype=ctx.attr("index_type", "int32")
    )
    return [out[0], out[1]]


@converter("Select")
def _select(ctx: NodeContext) -> Expr:
    cond, x, y = ctx.inputs[:3]
    cr, xr = ctx.ndim(0), ctx.ndim(1)
    if cr == 1 and xr > 1:  # a vector condition picks whole rows
        cond = op.reshape(cond, [ctx.shape(0)[0]] + [1] * (xr - 1))
    return op.where(cond, x, y)


@converter("SelectV2")
def _select_v2(ctx: NodeContext) -> Expr:
    return op.where(*ctx.inputs[:3])


@converter("Where")
def _where(ctx: NodeContext) -> Any:
    if len(ctx.inputs) == 3:
        return op.where(*ctx.inputs)
    if ctx.is_known(0):  # the coordinates of the true values, known at import
        return Constant(np.argwhere(ctx.value(0)).astype("int64"))
    return op.argwhere(ctx.inputs[0])
