"""``CombineParallelDense`` and ``CombineParallelBatchMatmul``: merge parallel matrix
products that read the same input into one wider product.

The query, key and value projections of an attention layer are three
``nn.dense`` calls on one input; with their weights concatenated they become
one ``nn.dense`` whose output is split back into the three results (TVM's
BERT optimisation). Branches are grouped by input node, dtype, attributes and
the weights' inner dimension; a group needs ``min_num_branches`` members.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(1, 4))
>>> ws = [relay.var(f"w{i}", shape=(8, 4)) for i in range(3)]
>>> f = relay.Function([x, *ws], relay.Tuple([relay.nn.dense(x, w) for w in ws]))
>>> with relay.transform.PassContext(opt_level=4):
...     out = CombineParallelDense()(IRModule.from_expr(f))["main"].body
>>> out.fields[0].tuple_value.args[0].op.name
'nn.dense'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaykit import op
from relaykit.ir.expr import Call, Constant, Expr, Function, TupleGetItem, Var, checked_type_or_none
from relaykit.ir.functor import post_order, rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType

from .combine_parallel_op import Combiner, combine_parallel
from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = [
    "CombineParallelDense",
    "CombineParallelBatchMatmul",
    "combine_parallel_dense",
    "combine_parallel_batch_matmul",
]


def _name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _groups(expr: Expr, op_name: str, key_fn: Any, min_branches: int) -> list[list[Call]]:
    groups: dict[Any, list[Call]] = {}
    for node in post_order(expr):
        if type(node) is not Call or _name(node) != op_name:
            continue
        key = key_fn(node)
        if key is not None and type(node.args[1]) in (Constant, Var):
            groups.setdefault(key, []).append(node)
    return [g for g in groups.values() if len(g) >= min_branches]


def _combine(expr: Expr, groups: Sequence[list[Call]], merged: Any, axis: int) -> Expr:
    """Replace each group member by its slice of ``merged(group)`` split on ``axis``."""
    replace: dict[Expr, Expr] = {}
    for group in groups:
        widths = [checked_type_or_none(c).shape[axis] for c in group]  # type: ignore[union-attr]
        combined = merged(group)
        points, total = [], 0
        for w in widths[:-1]:
            total += w
            points.append(total)
        parts = op.split(combined, points, axis=axis)
        for k, call in enumerate(group):
            replace[call] = TupleGetItem(parts.astuple(), k)
    return rewrite_post_order(expr, lambda new, old: replace.get(old))


def combine_parallel_dense(expr: Expr, min_num_branches: int = 3) -> Expr:
    """``expr`` with groups of ``nn.dense`` on the same input merged."""
    infer_type(expr)

    def key(call: Call) -> Any:
        w = checked_type_or_none(call.args[1])
        out = checked_type_or_none(call)
        if not isinstance(w, TensorType) or not isinstance(out, TensorType):
            return None
        return (id(call.args[0]), w.shape[1], w.dtype, call.attrs.out_dtype)

    groups = _groups(expr, "nn.dense", key, min_num_branches)
    if not groups:
        return expr

    def merged(group: list[Call]) -> Expr:
        weight = op.concatenate([c.args[1] for c in group], axis=0)
        units = sum(checked_type_or_none(c.args[1]).shape[0] for c in group)  # type: ignore[union-attr]
        return op.nn.dense(
            group[0].args[0], weight, units=units, out_dtype=group[0].attrs.out_dtype
        )

    return _combine(expr, groups, merged, axis=-1)


class BatchMatmulCombiner(Combiner):
    """``nn.batch_matmul`` calls with equal transposes, out_dtype, batch and inner sizes;
    the right operands are concatenated along their N axis."""

    op_name = "nn.batch_matmul"
    negative_arg_axis = True

    def key(self, call: Call) -> Any:
        b = checked_type_or_none(call.args[1])
        if not isinstance(b, TensorType) or not isinstance(checked_type_or_none(call), TensorType):
            return None
        k_axis = 2 if call.attrs.transpose_b else 1
        return (
            str(b.shape[0]),
            str(b.shape[k_axis]),
            b.dtype,
            bool(call.attrs.transpose_a),
            bool(call.attrs.transpose_b),
            call.attrs.out_dtype,
        )

    def channel_pos(self, call: Call) -> int:
        return 2

    def merge(self, group: Sequence[Call]) -> Call:
        first = group[0]
        n_axis = 1 if first.attrs.transpose_b else 2
        b = op.concatenate([c.args[1] for c in group], axis=n_axis)
        return op.nn.batch_matmul(
            first.args[0],
            b,
            out_dtype=first.attrs.out_dtype,
            transpose_a=bool(first.attrs.transpose_a),
            transpose_b=bool(first.attrs.transpose_b),
        )


def combine_parallel_batch_matmul(expr: Expr, min_num_branches: int = 3) -> Expr:
    """``expr`` with groups of ``nn.batch_matmul`` on the same left input merged (with
    the elementwise operators that follow them alike), each result a ``strided_slice``."""
    return combine_parallel(expr, BatchMatmulCombiner(), min_num_branches)


class CombineParallelDense(FunctionPass):
    """``relay.transform.CombineParallelDense(min_num_branches=3, to_batch=False)``
    (opt_level 4, as in TVM). ``to_batch=True`` (TVM's default stacking into a
    batch_matmul) is accepted and combines by concatenation all the same."""

    def __init__(self, min_num_branches: int = 3, to_batch: bool = False) -> None:
        self.min_num_branches = min_num_branches
        super().__init__(self._transform, opt_level=4, name="CombineParallelDense")

    def _transform(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = combine_parallel_dense(fn, self.min_num_branches)
        return out if isinstance(out, Function) else fn


class CombineParallelBatchMatmul(FunctionPass):
    """``relay.transform.CombineParallelBatchMatmul(min_num_branches=3)`` (opt_level 4)."""

    def __init__(self, min_num_branches: int = 3) -> None:
        self.min_num_branches = min_num_branches
        super().__init__(self._transform, opt_level=4, name="CombineParallelBatchMatmul")

    def _transform(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = combine_parallel_batch_matmul(fn, self.min_num_branches)
        return out if isinstance(out, Function) else fn
