"""Converters of Paddle's shape and indexing ops (reshape, transpose, flatten,
concat/split/stack, squeeze/unsqueeze, slicing, gather, expand/tile, embedding) and of
the ops that make constants (``full``, ``full_int_array``, ``assign_value``,
``shape`` of a static shape, ``arange`` of constant bounds).

PIR passes shapes, axes and bounds as operands made by ``full_int_array`` / ``full``;
those convert to constants, and :meth:`.OpContext.values` reads them back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr

from .registry import OpContext, converter

__all__: list[str] = []


def _int_list(value: Any) -> list[int]:
    return [int(value)] if isinstance(value, (int, float, np.integer)) else [int(v) for v in value]


@converter("reshape")
def _reshape(ctx: OpContext) -> Expr:
    shape = _int_list(ctx.values(("shape", "shapetensor"), ("shape",)))
    return op.reshape(ctx.input("x"), shape)


@converter("transpose")
def _transpose(ctx: OpContext) -> Expr:
    return op.transpose(ctx.input("x"), _int_list(ctx.attr("perm", "axis")))


@converter("flatten", "flatten2")
def _flatten(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    shape = ctx.shape(x)
    if ctx.type == "flatten2":  # old flatten: two dims split at ``axis``
        axis = int(ctx.attr("axis", default=1))
        return op.reshape(x, [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))])
    if not shape:
        return op.reshape(x, [1])
    start = ctx.axis(ctx.attr("start_axis", default=1), len(shape))
    stop = ctx.axis(ctx.attr("stop_axis", default=-1), len(shape))
    return op.reshape(
        x, [*shape[:start], int(np.prod(shape[start : stop + 1])), *shape[stop + 1 :]]
    )


@converter("concat")
def _concat(ctx: OpContext) -> Expr:
    xs = ctx.inputs("x")
    axis = _int_list(ctx.values(("axis", "axistensor"), ("axis",), default=0))[0]
    return op.concatenate(xs, ctx.axis(axis, ctx.ndim(xs[0])))


@converter("stack")
def _stack(ctx: OpContext) -> Expr:
    xs = ctx.inputs("x")
    return op.stack(xs, ctx.axis(ctx.attr("axis", default=0), ctx.ndim(xs[0]) + 1))


@converter("split", "split_with_num")
def _split(ctx: OpContext) -> list[Expr]:
    x = ctx.input("x")
    axis = ctx.axis(_int_list(ctx.values(("axis", "axistensor"), ("axis",), default=0))[0],
                    ctx.ndim(x))  # fmt: skip
    size = ctx.shape(x)[axis]
    sections = _int_list(ctx.values(("sections", "sectionstensorlist"), ("sections",), default=[]))
    num = int(ctx.attr("num", default=0))
    if num > 0 and not sections:
        sections = [size // num] * num
    if -1 in sections:
        known = sum(s for s in sections if s != -1)
        sections = [size - known if s == -1 else s for s in sections]
    if len(sections) == 1:
        return [x]
    cuts = list(np.cumsum(sections)[:-1])
    out = op.split(x, [int(c) for c in cuts], axis)
    return [out[i] for i in range(len(sections))]


@converter("unbind", "unstack")
def _unbind(ctx: OpContext) -> list[Expr]:
    x = ctx.input("x")
    shape = ctx.shape(x)
    axis = ctx.axis(ctx.attr("axis", default=0), len(shape))
    if shape[axis] == 1:
        return [op.squeeze(x, [axis])]
    parts = op.split(x, shape[axis], axis)
    return [op.squeeze(parts[i], [axis]) for i in range(shape[axis])]


@converter("squeeze")
def _squeeze(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    shape = ctx.shape(x)
    axes = _int_list(ctx.values(("axis", "axestensor"), ("axes",), default=[]))
    axes = [ctx.axis(a, len(shape)) for a in axes]
    if not axes:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = [a for a in axes if shape[a] == 1]  # paddle ignores axes that are not 1
    return op.squeeze(x, axes) if axes else x


@converter("unsqueeze")
def _unsqueeze(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    axes = _int_list(ctx.values(("axis", "axestensor", "axestensorlist"), ("axes",)))
    shape = list(ctx.shape(x))
    for a in axes:  # each axis indexes the shape as it is after the earlier insertions
        a = a + len(shape) + 1 if a < 0 else a
        shape.insert(a, 1)
    return op.reshape(x, shape)


def _region(
    ctx: OpContext, shape: tuple[int, ...], steps: list[int] | None
) -> tuple[list[int], list[int], list[int], list[int]]:
    """Full-rank ``begin, end, strides`` of the op's ``axes``/``starts``/``ends``,
    clamped as Python slicing clamps (Paddle does the same), and the region's sizes."""
    axes = [ctx.axis(a, len(shape)) for a in _int_list(ctx.attr("axes"))]
    starts = _int_list(ctx.values(("starts", "startstensor", "startstensorlist"), ("starts",)))
    ends = _int_list(ctx.values(("ends", "endstensor", "endstensorlist"), ("ends",)))
    steps = steps or [1] * len(axes)
    begin, end, step, sizes = [0] * len(shape), list(shape), [1] * len(shape), list(shape)
    for a, s, e, st in zip(axes, starts, ends, steps, strict=True):
        n = shape[a]
        start, stop, _ = slice(s, e, st).indices(n)
        sizes[a] = len(range(start, stop, st))
        # going backwards through index 0: Relay reads an end of -(n + 1) as "before 0"
        begin[a], end[a], step[a] = start, (-(n + 1) if stop == -1 else stop), st
    return begin, end, step, sizes


def _slice(ctx: OpContext, x: Expr, strides: list[int] | None) -> Expr:
    shape = ctx.shape(x)
    begin, end, step, _ = _region(ctx, shape, strides)
    out = op.strided_slice(x, begin, end, step)
    decrease = [ctx.axis(a, len(shape)) for a in _int_list(ctx.attr("decrease_axis", default=[]))]
    return op.squeeze(out, decrease) if decrease else out


@converter("slice")
def _slice_op(ctx: OpContext) -> Expr:
    return _slice(ctx, ctx.input("input", "x"), None)


@converter("strided_slice")
def _strided_slice(ctx: OpContext) -> Expr:
    strides = _int_list(ctx.values(("strides", "stridestensor", "stridestensorlist"), ("strides",)))
    return _slice(ctx, ctx.input("x", "input"), strides)


@converter("gather")
def _gather(ctx: OpContext) -> Expr:
    x, index = ctx.input("x"), ctx.input("index")
    axis = _int_list(ctx.values(("axis",), ("axis",), default=0))[0]
    return op.take(x, index, axis=ctx.axis(axis, ctx.ndim(x)))


@converter("gather_nd")
def _gather_nd(ctx: OpContext) -> Expr:
    index = ctx.input("index")
    n = ctx.ndim(index)
    return op.gather_nd(ctx.input("x"), op.transpose(index, [n - 1, *range(n - 1)]))


@converter("index_select")
def _index_select(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    return op.take(
        x, ctx.input("index"), axis=ctx.axis(ctx.attr("axis", "dim", default=0), ctx.ndim(x))
    )


@converter("expand")
def _expand(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    shape = _int_list(ctx.values(("shape", "shape_tensor", "expand_shapes_tensor"), ("shape",)))
    xs = list(ctx.shape(x))
    xs = [1] * (len(shape) - len(xs)) + xs
    target = [xs[i] if d == -1 else d for i, d in enumerate(shape)]
    return op.broadcast_to(x, target)


@converter("expand_as")
def _expand_as(ctx: OpContext) -> Expr:
    shape = ctx.shape(ctx.input("y")) if ctx.has("y") else _int_list(ctx.attr("target_shape"))
    return op.broadcast_to(ctx.input("x"), list(shape))


@converter("tile")
def _tile(ctx: OpContext) -> Expr:
    reps = _int_list(ctx.values(("repeat_times", "repeattimes"), ("repeat_times",)))
    return op.tile(ctx.input("x"), reps)


@converter("assign", "share_data", "memcpy")
def _assign(ctx: OpContext) -> Expr:
    return ctx.input("x")


@converter("embedding")
def _embedding(ctx: OpContext) -> Expr:
    ids, weight = ctx.input("x", "ids"), ctx.input("weight", "w")
    out = op.take(weight, ids, axis=0)
    pad = int(ctx.attr("padding_idx", default=-1))
    if pad >= 0:  # that row reads as zeros
        mask = op.expand_dims(op.not_equal(ids, ctx.const(pad, ctx.dtype(ids))), -1)
        out = op.multiply(out, op.cast(mask, ctx.dtype(weight)))
    return out


# -- constants ------------------------------------------------------------------------------
@converter("shape", "shape64")
def _shape(ctx: OpContext) -> Expr:
    shape = ctx.shape(ctx.input("input", "x"))
    return ctx.const(list(shape), "int64" if ctx.type == "shape64" else "int32")


@converter("full_int_array")
def _full_int_array(ctx: OpContext) -> Expr:
    dtype = ctx.dtype_name(ctx.attr("dtype", default="int64"))
    return ctx.const([int(v) for v in ctx.attr("value")], dtype)


@converter("full")
def _full(ctx: OpContext) -> Expr:
    dtype = ctx.dtype_name(ctx.attr("dtype", default="float32"))
    shape = _int_list(ctx.values(("shapetensor", "shapetensorlist"), ("shape",), default=[]))
    value = ctx.attr("value", default=None)
    text = ctx.attr("str_value", default="")
    if text not in ("", None):
        value = float(text)
    if hasattr(value, "item"):
        value = value.item()
    return ctx.const(np.full(shape, value), dtype)


@converter("full_like")
def _full_like(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    value = ctx.values(("value",), ("value",), default=0.0)
    value = value[0] if isinstance(value, list) else value
    dtype = ctx.attr("dtype", default=None)
    target = (
        ctx.dtype(x)
        if dtype is None or str(dtype) in ("-1", "DataType.UNDEFINED")
        else ctx.dtype_name(dtype)
    )
    return ctx.const(np.full(ctx.shape(x), value), target)


@converter("assign_value")
def _assign_value(ctx: OpContext) -> Expr:
    dtype = ctx.dtype_name(ctx.attr("dtype"))
    values = None
    for name in ("values", "fp32_values", "int32_values", "int64_values", "bool_values",
                 "fp64_values"):  # fmt: skip
        found = ctx.attr(name, default=None)
        if found:
            values = found
            break
    data = [v.item() if hasattr(v, "item") else v for v in (values or [])]
    return ctx.const(np.asarray(data).reshape(_int_list(ctx.attr("shape"))), dtype)


@converter("arange")
def _arange(ctx: OpContext) -> Expr:
    bounds = [ctx.values((slot,), (), default=None) for slot in ("start", "end", "step")]
    if any(b is None for b in bounds):
        raise ctx.fail("arange with bounds computed at run time is not supported")
    start, end, step = (b[0] if isinstance(b, list) else b for b in bounds)
    dtype = ctx.dtype_name(ctx.attr("dtype", default="int64"))
    return ctx.const(np.arange(start, end, step), dtype)


@converter("full_with_tensor")
def _full_with_tensor(ctx: OpContext) -> Expr:
    shape = _int_list(ctx.values(("shape",), ("shape",)))
    value = ctx.values(("value",), ("value",))
    value = value[0] if isinstance(value, list) else value
    dtype = ctx.dtype_name(ctx.attr("dtype", default="float32"))
    return ctx.const(np.full(shape, value), dtype)


@converter("fill_constant_batch_size_like")
def _fill_batch_like(ctx: OpContext) -> Expr:
    x = ctx.input("input")
    shape = _int_list(ctx.attr("shape"))
    shape[int(ctx.attr("output_dim_idx", default=0))] = ctx.shape(x)[
        int(ctx.attr("input_dim_idx", default=0))
    ]
    value = float(ctx.attr("str_value", default="") or ctx.attr("value", default=0.0))
    return ctx.const(np.full(shape, value), ctx.dtype_name(ctx.attr("dtype")))


@converter("numel", "size")
def _numel(ctx: OpContext) -> Expr:
    return ctx.const(int(np.prod(ctx.shape(ctx.input("x", "input")))), "int64")


@converter("lookup_table")
def _lookup_table(ctx: OpContext) -> Expr:
    """The first embedding op: ids carry a trailing dimension of 1."""
    ids = ctx.input("ids")
    return op.take(ctx.input("w"), op.squeeze(ids, [ctx.ndim(ids) - 1]), axis=0)


@converter("flip")
def _flip(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    for axis in _int_list(ctx.attr("axis", "dims")):
        x = op.reverse(x, ctx.axis(axis, ctx.ndim(x)))
    return x


@converter("one_hot")
def _one_hot(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    depth = _int_list(ctx.values(("num_classes", "depth_tensor"), ("depth",)))[0]
    on, off = ctx.const(1.0, "float32"), ctx.const(0.0, "float32")
    return op.one_hot(x, on, off, depth, -1, "float32")


@converter("take_along_axis")
def _take_along_axis(ctx: OpContext) -> Expr:
    arr, indices = ctx.input("arr", "input"), ctx.input("indices", "index")
    shape = list(ctx.shape(arr))
    axis = ctx.axis(ctx.attr("axis", "Axis"), len(shape))
    shape[axis] = ctx.shape(indices)[axis]
    return op.gather(arr, axis, op.broadcast_to(indices, shape))


@converter("scatter")
def _scatter(ctx: OpContext) -> Expr:
    x, index, updates = ctx.input("x"), ctx.input("index", "ids"), ctx.input("updates")
    ushape = ctx.shape(updates)
    rows = op.reshape(index, [-1, *([1] * (len(ushape) - 1))])
    rows = op.broadcast_to(rows, list(ushape))
    if bool(ctx.attr("overwrite", default=True)):
        return op.scatter_elements(x, rows, updates, 0)
    cleared = op.scatter_elements(x, rows, op.zeros_like(updates), 0)
    return op.scatter_elements(cleared, rows, updates, 0, reduction="add")


@converter("meshgrid")
def _meshgrid(ctx: OpContext) -> list[Expr]:
    xs = ctx.inputs("inputs", "x")
    grids = op.meshgrid(xs, indexing="ij")
    return [grids[i] for i in range(len(xs))]


@converter("eye")
def _eye(ctx: OpContext) -> Expr:
    rows = _int_list(ctx.values(("num_rows",), ("num_rows",)))[0]
    cols = _int_list(ctx.values(("num_columns",), ("num_columns",), default=-1))[0]
    cols = rows if cols < 0 else cols
    return ctx.const(np.eye(rows, cols), ctx.dtype_name(ctx.attr("dtype", default="float32")))


@converter("linspace")
def _linspace(ctx: OpContext) -> Expr:
    start = ctx.values(("start",), (), default=None)
    stop = ctx.values(("stop",), (), default=None)
    num = ctx.values(("number", "num"), (), default=None)
    if start is None or stop is None or num is None:
        raise ctx.fail("linspace with bounds computed at run time is not supported")
    dtype = ctx.dtype_name(ctx.attr("dtype", default="float32"))
    # as Paddle computes it: the bounds converted to the output dtype first (integers
    # truncate), the first half stepping from the start and the rest back from the
    # stop in double, each value converted again
    integer = not dtype.startswith("float")
    first, last = (float(np.trunc(v[0])) if integer else float(v[0]) for v in (start, stop))
    n = int(num[0])
    if n == 1:
        return ctx.const([first], dtype)
    step = (last - first) / (n - 1)
    values = [first + step * i if i < n // 2 else last - step * (n - 1 - i) for i in range(n)]
    return ctx.const(np.trunc(values) if integer else values, dtype)


@converter("zeros_like", "ones_like")
def _zeros_like(ctx: OpContext) -> Expr:
    x = ctx.input("x")
    return op.zeros_like(x) if ctx.type == "zeros_like" else op.ones_like(x)


@converter("scatter_nd_add")
def _scatter_nd_add(ctx: OpContext) -> Expr:
    index = ctx.input("index")
    n = ctx.ndim(index)
    moved = op.transpose(index, [n - 1, *range(n - 1)])
    return op.scatter_nd(ctx.input("x"), moved, ctx.input("updates"), reduction="add")


@converter("set_value", "set_value_with_tensor")
def _set_value(ctx: OpContext) -> Expr:
    """``x[slices] = value``: the value (a tensor, or the op's list of numbers)
    broadcast over the slice."""
    x = ctx.input("x", "input")
    shape = ctx.shape(x)
    steps = _int_list(
        ctx.values(("steps", "stepstensor", "stepstensorlist"), ("steps",), default=[])
    )
    begin, end, step, region = _region(ctx, shape, steps or None)
    value: Expr
    if ctx.has("values", "valuetensor"):
        value = op.cast(ctx.input("values", "valuetensor"), ctx.dtype(x))
    else:
        numbers = None
        for name in ("values", "fp32_values", "fp64_values", "int32_values", "int64_values",
                     "bool_values"):  # fmt: skip
            found = ctx.attr(name, default=None)
            if found:
                numbers = [v.item() if hasattr(v, "item") else v for v in found]
                break
        if numbers is None:
            raise ctx.fail("has no value to set")
        vshape = _int_list(ctx.attr("shape", default=[len(numbers)]))
        value = ctx.const(np.asarray(numbers).reshape(vshape), ctx.dtype(x))
    value = op.broadcast_to(value, region)
    index = [ctx.const(v, "int64") for v in (begin, end, step)]
    return op.strided_set(x, value, index[0], index[1], index[2])
