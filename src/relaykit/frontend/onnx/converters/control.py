"""ONNX converters: control flow. ``If`` on a condition known at import picks its
branch, otherwise it is a Relay ``If``; ``Loop`` with a trip count and condition known
at import and ``Scan`` over a static sequence are unrolled, each iteration importing
the body with its inputs bound; any other ``Loop`` is a tail-recursive local function
(TVM's ``relay.loops.while_loop`` shape) that the Relay VM runs, its scan outputs
grown by concatenation (a ``?`` leading dimension)."""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.errors import DynamicShapeError
from relaykit.frontend.onnx.limits import check_unroll
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import FuncType, TensorType, TupleType, Type
from relaykit.op import dyn

from .common import normalize_axis

__all__: list[str] = []

_MAX_UNROLL = 4096


@converter("If", 1)
def _if(ctx: NodeContext, cond: Expr, *, then_branch: Any = None, else_branch: Any = None):
    if isinstance(cond, Constant):
        taken = then_branch if bool(np.asarray(cond.data.numpy()).reshape(-1)[0]) else else_branch
        return ctx.importer.run_subgraph(taken, [], ctx)
    then_outs = ctx.importer.run_subgraph(then_branch, [], ctx)
    else_outs = ctx.importer.run_subgraph(else_branch, [], ctx)
    type_of = ctx.importer.type_of  # (a branch may give a sequence: a tuple)
    for k, (a, b) in enumerate(zip(then_outs, else_outs, strict=True)):
        ta, tb = type_of(a, ctx), type_of(b, ctx)
        if ta == tb:
            continue
        if _same_structure(ta, tb):
            # tensors of one rank and dtype whose sizes differ: both get ? dimensions
            then_outs[k], else_outs[k] = _forget_sizes(a, ta), _forget_sizes(b, tb)
            continue
        raise DynamicShapeError(
            f"{ctx.where}: "
            f"output {k} is {ta} in then_branch but {tb} in "
            "else_branch; relaykit's If needs both branches to have one type (tensors may "
            "differ in their sizes, not in their rank or dtype), or its condition known at "
            "import"
        )
    flag = cond if ctx.shape(cond) == () else op.reshape(cond, ())
    if ctx.dtype(flag) != "bool":
        flag = op.cast(flag, "bool")
    ite = If(flag, Tuple(then_outs), Tuple(else_outs))
    return [TupleGetItem(ite, k) for k in range(len(then_outs))]


def _same_structure(a: Type, b: Type) -> bool:
    """Whether ``a`` and ``b`` differ at most in tensor sizes (same ranks, dtypes and tuple
    lengths)."""
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return a.dtype == b.dtype and len(a.shape) == len(b.shape)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.fields) == len(b.fields) and all(
            _same_structure(x, y) for x, y in zip(a.fields, b.fields, strict=True)
        )
    return False


def _forget_sizes(x: Expr, t: Type) -> Expr:
    """``x`` with every tensor dimension ``?`` (``dyn.as_dynamic``, which no pass folds
    back to the static sizes)."""
    if isinstance(t, TupleType):
        return Tuple([_forget_sizes(TupleGetItem(x, i), f) for i, f in enumerate(t.fields)])
    return dyn.as_dynamic(x)


def _slice_axis(x: Expr, axis: int, i: int) -> Expr:
    return op.squeeze(op.strided_slice(x, [i], [i + 1], axes=[axis]), [axis])


class _RunTimeCondition(Exception):
    """An unrolled Loop met a condition computed at run time."""


@converter("Loop", 1)
def _loop(ctx: NodeContext, trip: Expr | None, cond: Expr | None, *carried: Expr, body: Any):
    """A Loop whose trip count and condition are known at import is unrolled; otherwise
    it is a tail-recursive local function (as ``relay.loops.while_loop``) run by the VM."""
    known = all(e is None or isinstance(e, Constant) for e in (trip, cond))
    n = _MAX_UNROLL if trip is None or not known else int(ctx.scalar(trip, "M"))
    if known and n <= _MAX_UNROLL:
        try:
            return _loop_unrolled(ctx, trip, cond, carried, body)
        except _RunTimeCondition:
            pass
    return _loop_recursive(ctx, trip, cond, carried, body)


def _loop_unrolled(
    ctx: NodeContext, trip: Expr | None, cond: Expr | None, carried: tuple[Expr, ...], body: Any
) -> list[Expr]:
    n = _MAX_UNROLL if trip is None else int(ctx.scalar(trip, "M"))
    keep = True if cond is None else bool(ctx.scalar(cond, "cond"))
    check_unroll(ctx.where, "the number of iterations", max(n, 0), len(body.node) + 1)
    state = list(carried)
    scans: list[list[Expr]] = []
    n_scan = len(body.output) - 1 - len(carried)
    i = 0
    while i < n and keep:
        it = Constant(np.array(i, dtype="int64"))
        c = Constant(np.array(keep, dtype="bool"))
        outs = ctx.importer.run_subgraph(body, [it, c, *state], ctx)
        cond_out = outs[0]
        if cond is not None or trip is None:
            if not isinstance(cond_out, Constant):
                raise _RunTimeCondition
            keep = bool(np.asarray(cond_out.data.numpy()).reshape(-1)[0])
        state = outs[1 : 1 + len(carried)]
        for k, s in enumerate(outs[1 + len(carried) :]):
            if len(scans) <= k:
                scans.append([])
            scans[k].append(s)
        i += 1
    if trip is None and keep:
        raise _RunTimeCondition
    results = list(state)
    for k in range(n_scan):
        parts = scans[k] if k < len(scans) else []
        if not parts:
            raise _RunTimeCondition  # the element type is only known from the body
        results.append(op.stack(parts, axis=0))
    return results


def _relaxed(t: Type) -> Type:
    """``t`` with every dimension ``?`` (a loop-carried value whose shape changes)."""
    if isinstance(t, TensorType):
        return TensorType(tuple(AnyDim() for _ in t.shape), t.dtype)
    if isinstance(t, TupleType):
        return TupleType([_relaxed(f) for f in t.fields])
    return t


def _as_flag(ctx: NodeContext, e: Expr, dtype: str) -> Expr:
    """A one-element tensor as a scalar of ``dtype``."""
    flag = e if ctx.shape(e) == () else op.reshape(e, ())
    return flag if ctx.dtype(flag) == dtype else op.cast(flag, dtype)


def _loop_recursive(
    ctx: NodeContext, trip: Expr | None, cond: Expr | None, carried: tuple[Expr, ...], body: Any
) -> list[Expr]:
    type_of = ctx.importer.type_of
    n_state = len(carried)
    types = [type_of(v, ctx) for v in carried]
    for _ in range(2):  # a second pass with ? dims when the body changes a state's shape
        it = Var("iter_num", TensorType((), "int64"))
        c = Var("cond", TensorType((), "bool"))
        states = [Var(f"state{k}", t) for k, t in enumerate(types)]
        outs = ctx.importer.run_subgraph(body, [it, c, *states], ctx)
        new_types = [type_of(o, ctx) for o in outs[1 : 1 + n_state]]
        if new_types == types:
            break
        types = [t if t == u else _relaxed(t) for t, u in zip(types, new_types, strict=True)]
    else:
        raise ctx.unsupported(
            f"a Loop whose state types change from {types} to {new_types} (e.g. a sequence "
            "that grows)"
        )
    cond_out = outs[0] if cond is not None or trip is None else c
    scans = outs[1 + n_state :]
    accs: list[Var] = []
    empties: list[Expr] = []
    for k, s in enumerate(scans):
        t = type_of(s, ctx)
        if not isinstance(t, TensorType):
            raise ctx.unsupported(f"a Loop scan output of type {t} (tensors only)")
        accs.append(Var(f"scan{k}", TensorType((AnyDim(), *t.shape), t.dtype)))
        # (a ? element dimension is 0 in the empty start; the first element replaces it)
        dims = tuple(d if type(d) is int else 0 for d in t.shape)
        empties.append(Constant(np.zeros((0, *dims), dtype=t.dtype)))
    params = [it, c, *states, *accs]
    ptypes: list[Type] = [p.type_annotation for p in params]  # type: ignore[misc]
    loop_type = FuncType(ptypes, TupleType(ptypes))
    loop = Var("loop", loop_type)
    go: Expr = c
    if trip is not None:
        go = op.logical_and(go, op.less(it, _as_flag(ctx, trip, "int64")))
    first = op.equal(it, Constant(np.array(0, "int64")))
    grown: list[Expr] = []
    for acc, s in zip(accs, scans, strict=True):
        row = op.expand_dims(s, 0)
        more = op.concatenate([acc, row], 0)
        static = all(type(d) is int for d in type_of(s, ctx).shape)
        grown.append(more if static else If(first, row, more))
    again = Call(
        loop,
        [
            op.add(it, Constant(np.array(1, "int64"))),
            _as_flag(ctx, cond_out, "bool"),
            *outs[1 : 1 + n_state],
            *grown,
        ],
    )
    fn = Function(params, If(go, again, Tuple(params)), loop_type.ret_type)
    start = Constant(np.array(True)) if cond is None else _as_flag(ctx, cond, "bool")
    result = Let(loop, fn, Call(loop, [Constant(np.array(0, "int64")), start, *carried, *empties]))
    return [TupleGetItem(result, 2 + k) for k in range(n_state + len(scans))]


@converter("Scan", 9)
def _scan(ctx: NodeContext, *inputs: Expr, **attrs: Any) -> list[Expr]:
    body = attrs["body"]
    m = int(attrs["num_scan_inputs"])
    if not 0 <= m <= len(inputs):
        raise ctx.fail(f"num_scan_inputs={m}, but the node has {len(inputs)} inputs")
    states = list(inputs[: len(inputs) - m])
    xs = list(inputs[len(inputs) - m :])
    in_axes = list(attrs.get("scan_input_axes") or [0] * m)
    in_dirs = list(attrs.get("scan_input_directions") or [0] * m)
    axes = [normalize_axis(ctx, a, ctx.ndim(x)) for a, x in zip(in_axes, xs, strict=True)]
    length = ctx.shape(xs[0])[axes[0]] if xs else 0
    n_out = len(body.output) - len(states)
    if n_out < 0:
        raise ctx.fail(
            f"the body has {len(body.output)} outputs, fewer than the {len(states)} states"
        )
    out_axes = list(attrs.get("scan_output_axes") or [0] * n_out)
    out_dirs = list(attrs.get("scan_output_directions") or [0] * n_out)
    check_unroll(ctx.where, "the scan length", length, len(body.node) + 1)
    collected: list[list[Expr]] = [[] for _ in range(n_out)]
    for t in range(length):
        slices = [
            _slice_axis(x, a, length - 1 - t if d else t)
            for x, a, d in zip(xs, axes, in_dirs, strict=True)
        ]
        outs = ctx.importer.run_subgraph(body, [*states, *slices], ctx)
        states = outs[: len(states)]
        for k, y in enumerate(outs[len(states) :]):
            collected[k].append(y)
    results = list(states)
    for k in range(n_out):
        parts = collected[k][::-1] if out_dirs[k] else collected[k]
        rank = ctx.ndim(parts[0]) + 1
        results.append(op.stack(parts, axis=normalize_axis(ctx, out_axes[k], rank)))
    return results


@converter("Scan", 8)
def _scan_v8(ctx: NodeContext, lens: Expr | None, *inputs: Expr, **attrs: Any) -> list[Expr]:
    """Opset 8 scans have a leading batch axis: scan each batch item and stack."""
    if lens is not None:
        raise ctx.unsupported("Scan-8 with sequence_lens")
    body = attrs["body"]
    m = int(attrs["num_scan_inputs"])
    batch = ctx.shape(inputs[0])[0]
    check_unroll(ctx.where, "the batch size", batch, len(body.node) + 1)
    per_item = []
    for b in range(batch):
        items = [_slice_axis(x, 0, b) for x in inputs]
        # opset-8 scan inputs are (batch, seq, ...): scan along axis 0 of each item
        per_item.append(
            _scan(
                ctx,
                *items,
                body=body,
                num_scan_inputs=m,
                scan_input_directions=attrs.get("directions"),
            )
        )
    return [op.stack([r[k] for r in per_item], axis=0) for k in range(len(per_item[0]))]
