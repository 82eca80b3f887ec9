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
    cuts = list(np.cumsum(sections)[:-1])
    out = op.split(x, [int(c) for c in cuts], axis)
    return [out[i] for i in range(len(sections))]


@converter("unbind", "unstack")
def _unbind(ctx: OpContext) -> list[Expr]:
    x = ctx.input("x")
    shape = ctx.shape(x)
    axis = ctx.axis(ctx.attr("axis", default=0), len(shape))
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


def _slice(ctx: OpContext, x: Expr, strides: list[int] | None) -> Expr:
    shape = ctx.shape(x)
    axes = [ctx.axis(a, len(shape)) for a in _int_list(ctx.attr("axes"))]
    starts = _int_list(ctx.values(("starts", "startstensor", "startstensorlist"), ("starts",)))
    ends = _int_list(ctx.values(("ends", "endstensor", "endstensorlist"), ("ends",)))
    steps = strides or [1] * len(axes)
    begin, end, step = [0] * len(shape), list(shape), [1] * len(shape)
    for a, s, e, st in zip(axes, starts, ends, steps, strict=True):
        n = shape[a]
        # paddle clamps out-of-range bounds like Python slicing does
        start, stop, _ = slice(s, e, st).indices(n)
        if st < 0 and e < -n:
            stop = -1
        begin[a], end[a], step[a] = start, stop, st
    out = op.strided_slice(x, begin, end, step)
    for a, st in zip(axes, steps, strict=True):  # the reference's end of -1 going backwards
        if st < 0 and end[a] == -1:
            raise ctx.fail("a negative-stride slice through index 0 is not supported")
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
