"""ONNX converters for sequences, held as Relay tuples whose length is fixed at import.

A sequence's length is part of its type: ``SequenceConstruct``, ``SplitToSequence``
and ``SequenceEmpty`` make tuples, ``SequenceInsert``/``SequenceErase`` build new ones,
and positions (``SequenceAt``, ``SequenceInsert``'s and ``SequenceErase``'s
``position``) must be known at import. A sequence graph input is bound to its value
(``from_onnx(..., const_inputs={name: [arrays]})``; the ONNX backend does this when it
runs the model). ``Loop`` and ``If`` carry sequences like any other value, as the
unrolled loop and the branch taken at import build them; ``SequenceMap`` imports its
body once per element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.limits import check_unroll
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr, Tuple, TupleGetItem
from relaykit.ir.types import TupleType
from relaykit.op import dyn

from .common import normalize_axis

__all__: list[str] = []


def elements(ctx: NodeContext, seq: Expr) -> list[Expr]:
    """The element expressions of a sequence (a tuple-typed expression)."""
    ty = ctx.importer.type_of(seq, ctx)
    if not isinstance(ty, TupleType):
        raise ctx.fail(f"expected a sequence, got a value of type {ty}")
    if isinstance(seq, Tuple):
        return list(seq.fields)
    return [TupleGetItem(seq, i) for i in range(len(ty.fields))]


def _position(ctx: NodeContext, pos: Expr | None, length: int, default: int, insert: bool) -> int:
    """A position in ``[-length, length - 1]`` (``[-length, length]`` to insert), as an
    index in ``[0, length]``."""
    if pos is None:
        return default
    p = int(ctx.scalar(pos, "position"))
    high = length if insert else length - 1
    if not -length <= p <= high:
        raise ctx.fail(f"position {p} is out of range for a sequence of length {length}")
    return p + length if p < 0 else p


@converter("SequenceConstruct", 11)
def _sequence_construct(ctx: NodeContext, *tensors: Expr) -> Expr:
    return Tuple(list(tensors))


@converter("SequenceEmpty", 11)
def _sequence_empty(ctx: NodeContext, *, dtype: Any = None) -> Expr:
    return Tuple([])


@converter("SequenceLength", 11)
def _sequence_length(ctx: NodeContext, seq: Expr) -> Expr:
    return Constant(np.array(len(elements(ctx, seq)), dtype="int64"))


@converter("SequenceAt", 11)
def _sequence_at(ctx: NodeContext, seq: Expr, pos: Expr) -> Expr:
    items = elements(ctx, seq)
    return items[_position(ctx, pos, len(items), 0, insert=False)]


@converter("SequenceInsert", 11)
def _sequence_insert(ctx: NodeContext, seq: Expr, tensor: Expr, pos: Expr | None = None) -> Expr:
    items = elements(ctx, seq)
    at = _position(ctx, pos, len(items), len(items), insert=True)
    return Tuple([*items[:at], tensor, *items[at:]])


@converter("SequenceErase", 11)
def _sequence_erase(ctx: NodeContext, seq: Expr, pos: Expr | None = None) -> Expr:
    items = elements(ctx, seq)
    if not items:
        raise ctx.fail("cannot erase from an empty sequence")
    at = _position(ctx, pos, len(items), len(items) - 1, insert=False)
    return Tuple(items[:at] + items[at + 1 :])


@converter("SplitToSequence", 11)
def _split_to_sequence(
    ctx: NodeContext, x: Expr, split: Expr | None = None, *, axis: int = 0, keepdims: int = 1
) -> Expr:
    shape = ctx.shape(x)
    a = normalize_axis(ctx, axis, len(shape))
    n = shape[a]
    if split is None:
        check_unroll(ctx.where, "the sequence length", n, 2)
        parts = [op.strided_slice(x, [i], [i + 1], axes=[a]) for i in range(n)]
        if not keepdims:
            parts = [op.squeeze(p, [a]) for p in parts]
        return Tuple(parts)
    if not ctx.is_constant(split) and ctx.ndim(split) == 1:
        # run-time sizes, a length fixed by split's static length: dyn.split
        count = ctx.shape(split)[0]
        parts_of = dyn.split(x, split, a)
        return Tuple([TupleGetItem(parts_of, k) for k in range(int(count))])
    sizes_arr = np.asarray(ctx.value(split, "split")).astype(np.int64)
    if sizes_arr.ndim == 0:
        step = int(sizes_arr)
        if step <= 0:
            raise ctx.fail(f"split must be positive, got {step}")
        check_unroll(ctx.where, "the sequence length", -(-n // step))
        sizes = [min(step, n - s) for s in range(0, n, step)]
    else:
        check_unroll(ctx.where, "the sequence length", sizes_arr.size)
        sizes = [int(v) for v in sizes_arr]
        if sum(sizes) != n or min(sizes, default=0) < 0:
            raise ctx.fail(f"split {sizes} does not add up to dimension {a} of size {n}")
    parts, start = [], 0
    for size in sizes:
        parts.append(op.strided_slice(x, [start], [start + size], axes=[a]))
        start += size
    return Tuple(parts)


@converter("ConcatFromSequence", 11)
def _concat_from_sequence(ctx: NodeContext, seq: Expr, *, axis: int = 0, new_axis: int = 0) -> Expr:
    items = elements(ctx, seq)
    if not items:
        raise ctx.fail("cannot concatenate an empty sequence")
    rank = ctx.ndim(items[0]) + (1 if new_axis else 0)
    a = normalize_axis(ctx, axis, rank)
    if new_axis:
        return op.stack(items, axis=a)
    return op.concatenate(items, axis=a)


@converter("SequenceMap", 17)
def _sequence_map(ctx: NodeContext, seq: Expr, *extra: Expr | None, body: Any) -> list[Expr]:
    """The body imported once per element; extra sequence inputs are iterated with the
    first, extra tensor inputs are passed whole to each iteration."""
    items = elements(ctx, seq)
    others: list[Any] = []
    for x in extra:
        if x is not None and isinstance(ctx.importer.type_of(x, ctx), TupleType):
            xs = elements(ctx, x)
            if len(xs) != len(items):
                raise ctx.fail(f"the input sequences have lengths {len(items)} and {len(xs)}")
            others.append(xs)
        else:
            others.append(x)
    n_out = len(body.output)
    results: list[list[Expr]] = [[] for _ in range(n_out)]
    for i, item in enumerate(items):
        args = [item] + [o[i] if isinstance(o, list) else o for o in others]
        outs = ctx.importer.run_subgraph(body, args, ctx)
        for k, y in enumerate(outs):
            results[k].append(y)
    return [Tuple(r) for r in results]


# -- optionals: decided at import -------------------------------------------------------------
# An optional holding a value is that value; an empty one is an empty tuple the importer
# remembers (``importer.empty_optionals``). Whether an optional is empty is thus known at
# import, and ``OptionalHasElement`` is a constant.


def _is_empty(ctx: NodeContext, x: Expr | None) -> bool:
    return x is None or x in ctx.importer.empty_optionals


@converter("Optional", 15)
def _optional(ctx: NodeContext, x: Expr | None = None, *, type: Any = None) -> Expr:
    return ctx.importer.empty_optional() if x is None else x


@converter("OptionalHasElement", 15)
def _optional_has_element(ctx: NodeContext, x: Expr | None = None) -> Expr:
    return Constant(np.array(not _is_empty(ctx, x)))


@converter("OptionalGetElement", 15)
def _optional_get_element(ctx: NodeContext, x: Expr) -> Expr:
    if _is_empty(ctx, x):
        raise ctx.fail("the optional input is empty")
    return x
