"""``CombineParallelBatchMatmul``: ``nn.batch_matmul`` calls that share their left
operand become one product whose right operands are concatenated (the operators after
them alike), each result a ``strided_slice`` of it. ``CombineParallelDense`` is in
:mod:`relaykit.transform.combine_parallel_dense`.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2, 3, 4))
>>> ws = [relay.var(f"w{i}", shape=(2, 5, 4)) for i in range(3)]
>>> f = relay.Function([x, *ws], relay.Tuple([relay.nn.batch_matmul(x, w) for w in ws]))
>>> out = CombineParallelBatchMatmul()(IRModule.from_expr(f))["main"].body
>>> out.fields[0].op.name, out.fields[0].args[0].op.name
('strided_slice', 'nn.batch_matmul')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaykit import op
from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType

from .combine_parallel_op import Combiner, combine_parallel
from .pass_infra import FunctionPass, PassContext

__all__ = [
    "CombineParallelBatchMatmul",
    "combine_parallel_batch_matmul",
]


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


class CombineParallelBatchMatmul(FunctionPass):
    """``relay.transform.CombineParallelBatchMatmul(min_num_branches=3)`` (opt_level 4)."""

    def __init__(self, min_num_branches: int = 3) -> None:
        self.min_num_branches = min_num_branches
        super().__init__(self._transform, opt_level=4, name="CombineParallelBatchMatmul")

    def _transform(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = combine_parallel_batch_matmul(fn, self.min_num_branches)
        return out if isinstance(out, Function) else fn
