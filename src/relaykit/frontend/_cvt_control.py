"""ONNX converters: control flow. ``If`` on a condition known at import picks its
branch; ``Loop`` with a known trip count and ``Scan`` over a static sequence are
unrolled, each iteration importing the body with its inputs bound."""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.errors import DynamicShapeError
from relaykit.ir.expr import Constant, Expr, If, Tuple, TupleGetItem

from ._cvt_util import normalize_axis
from ._limits import check_unroll
from ._onnx_registry import NodeContext, converter

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
        if type_of(a, ctx) != type_of(b, ctx):
            raise DynamicShapeError(
                f"{ctx.where}: "
                f"output {k} is {type_of(a, ctx)} in then_branch but {type_of(b, ctx)} in "
                "else_branch; relaykit's If needs both branches to have one static type, "
                "or its condition known at import"
            )
    flag = cond if ctx.shape(cond) == () else op.reshape(cond, ())
    if ctx.dtype(flag) != "bool":
        flag = op.cast(flag, "bool")
    ite = If(flag, Tuple(then_outs), Tuple(else_outs))
    return [TupleGetItem(ite, k) for k in range(len(then_outs))]


def _slice_axis(x: Expr, axis: int, i: int) -> Expr:
    return op.squeeze(op.strided_slice(x, [i], [i + 1], axes=[axis]), [axis])


@converter("Loop", 1)
def _loop(ctx: NodeContext, trip: Expr | None, cond: Expr | None, *carried: Expr, body: Any):
    n = _MAX_UNROLL if trip is None else int(ctx.scalar(trip, "M"))
    keep = True if cond is None else bool(ctx.scalar(cond, "cond"))
    if n > _MAX_UNROLL:
        raise ctx.unsupported(f"a Loop of {n} iterations (unrolled up to {_MAX_UNROLL})")
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
                raise ctx.unsupported("a Loop whose condition is computed at run time")
            keep = bool(np.asarray(cond_out.data.numpy()).reshape(-1)[0])
        state = outs[1 : 1 + len(carried)]
        for k, s in enumerate(outs[1 + len(carried) :]):
            if len(scans) <= k:
                scans.append([])
            scans[k].append(s)
        i += 1
    if trip is None and keep:
        raise ctx.unsupported(f"a Loop running more than {_MAX_UNROLL} iterations")
    results = list(state)
    for k in range(n_scan):
        parts = scans[k] if k < len(scans) else []
        if not parts:
            raise ctx.unsupported("a Loop with no iterations and scan outputs")
        results.append(op.stack(parts, axis=0))
    return results


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
