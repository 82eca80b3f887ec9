"""``CombineParallelDense``: ``nn.dense`` calls that read the same input become one
product, in one of TVM's two forms.

- ``to_batch=True`` (TVM's default): denses with weights of one shape are stacked into
  one ``nn.batch_matmul`` (the input stacked as many times); elementwise and broadcast
  operators after them are stacked alike (their other operands expanded to the
  output's rank, then stacked); the result is ``split`` on the batch axis and each part
  ``squeeze``-d back.
- ``to_batch=False``: the weights (of any number of units, one inner size) are
  concatenated into one wider ``nn.dense``; the operators after it are merged by
  concatenating their other operands on the last axis (a size-1 or scalar operand is
  repeated to its branch's width first), and each branch's result is a
  ``strided_slice`` of the channels.

A group needs ``min_num_branches`` members (3 by default).

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2, 4))
>>> ws = [relay.var(f"w{i}", shape=(8, 4)) for i in range(3)]
>>> f = relay.Function([x, *ws], relay.Tuple([relay.nn.dense(x, w) for w in ws]))
>>> out = CombineParallelDense()(IRModule.from_expr(f))["main"].body
>>> out.fields[0].op.name, out.fields[0].args[0].tuple_value.args[0].op.name
('squeeze', 'nn.batch_matmul')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaykit import op
from relaykit.ir.expr import Call, Expr, Function, TupleGetItem, checked_type_or_none
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.structural import structural_equal
from relaykit.ir.types import TensorType

from .combine_parallel_op import Combiner, combine_parallel
from .pass_infra import FunctionPass, PassContext

__all__ = [
    "CombineParallelDense",
    "combine_parallel_dense",
    "DenseToDenseCombiner",
    "DenseToBatchCombiner",
]


def _tensor(e: Expr) -> TensorType | None:
    t = checked_type_or_none(e)
    return t if isinstance(t, TensorType) else None


def _is(call: Call, name: str) -> bool:
    return type(call.op) is Op and call.op.name == name


class DenseToDenseCombiner(Combiner):
    """Concatenated weights, one wider dense, channel slices (``to_batch=False``)."""

    op_name = "nn.dense"

    def key(self, call: Call) -> Any:
        w, out = _tensor(call.args[1]), _tensor(call)
        if w is None or out is None or len(w.shape) != 2:
            return None
        return (str(w.shape[1]), w.dtype, call.attrs.out_dtype)

    def channel_pos(self, call: Call) -> int:
        return len(_tensor(call).shape) - 1  # type: ignore[union-attr]

    def follows(self, call: Call) -> bool:
        return _is(call, "expand_dims") or super().follows(call)

    def next_pos(self, call: Call, pos: int) -> int:
        out, data = _tensor(call), _tensor(call.args[0])
        if out is None or data is None:
            return pos
        if _is(call, "expand_dims"):
            axis = int(call.attrs.axis)
            axis = axis + len(data.shape) + 1 if axis < 0 else axis
            return pos + int(call.attrs.num_newaxis) if axis <= pos else pos
        # broadcasting aligns on the right
        return pos + len(out.shape) - len(data.shape)

    def merge(self, group: Sequence[Call]) -> Call:
        units = 0
        for c in group:
            units += int(_tensor(c.args[1]).shape[0])  # type: ignore[union-attr]
        weight = op.concatenate([c.args[1] for c in group], axis=0)
        return op.nn.dense(
            group[0].args[0], weight, units=units, out_dtype=group[0].attrs.out_dtype
        )

    def arg_compatible(self, call: Call, first: Call, index: int, pos: int) -> bool:
        ta, tb, out = _tensor(call.args[index]), _tensor(first.args[index]), _tensor(call)
        if ta is None or tb is None or out is None:
            return False
        if ta.dtype != tb.dtype or len(ta.shape) != len(tb.shape) or len(out.shape) < len(ta.shape):
            return False
        if ta.shape and len(out.shape) - len(ta.shape) > pos:  # it does not reach the channels
            return False
        return all(
            structural_equal(a, b) for a, b in zip(ta.shape[:-1], tb.shape[:-1], strict=True)
        )

    def merge_arg(self, calls: Sequence[Call], index: int, pos: int) -> Expr:
        parts: list[Expr] = []
        rank = 1
        for call in calls:
            arg, ta = call.args[index], _tensor(call.args[index])
            width = int(_tensor(call).shape[pos])  # type: ignore[union-attr]
            assert ta is not None  # checked by arg_compatible
            rank = max(len(ta.shape), 1)
            if len(ta.shape) == 0:
                arg = op.repeat(op.expand_dims(arg, axis=-1), width, 0)
            elif ta.shape[-1] == 1 and width != 1:
                arg = op.repeat(arg, width, len(ta.shape) - 1)
            parts.append(arg)
        return op.concatenate(parts, axis=rank - 1)

    def outputs(self, merged: Expr, lasts: Sequence[Call], pos: int) -> list[Expr]:
        out: list[Expr] = []
        offset = 0
        for last in lasts:
            shape = _tensor(last).shape  # type: ignore[union-attr]
            width = int(shape[pos])
            begin = [offset if k == pos else 0 for k in range(len(shape))]
            end = [width if k == pos else -1 for k in range(len(shape))]
            out.append(
                op.strided_slice(
                    merged, begin=begin, end=end, strides=[1] * len(shape), slice_mode="size"
                )
            )
            offset += width
        return out


class DenseToBatchCombiner(Combiner):
    """Stacked inputs and weights, one batch_matmul, split and squeezed (``to_batch``)."""

    op_name = "nn.dense"

    def key(self, call: Call) -> Any:
        w, out = _tensor(call.args[1]), _tensor(call)
        if w is None or out is None or len(w.shape) != 2:
            return None
        return (str(w.shape[0]), str(w.shape[1]), w.dtype, call.attrs.out_dtype)

    def channel_pos(self, call: Call) -> int:
        return 0  # the stacking axis

    def merge(self, group: Sequence[Call]) -> Call:
        data = op.stack([c.args[0] for c in group], axis=0)
        weight = op.stack([c.args[1] for c in group], axis=0)
        return op.nn.batch_matmul(data, weight, out_dtype=group[0].attrs.out_dtype)

    def arg_compatible(self, call: Call, first: Call, index: int, pos: int) -> bool:
        ta, tb, out = _tensor(call.args[index]), _tensor(first.args[index]), _tensor(call)
        if ta is None or tb is None or out is None or ta.dtype != tb.dtype:
            return False
        # the operand must not broadcast the branch to a larger shape
        if len(ta.shape) >= len(out.shape) and not structural_equal(ta.shape, out.shape):
            return False
        return len(ta.shape) == len(tb.shape) and all(
            structural_equal(a, b) for a, b in zip(ta.shape, tb.shape, strict=True)
        )

    def merge_arg(self, calls: Sequence[Call], index: int, pos: int) -> Expr:
        parts: list[Expr] = []
        for call in calls:
            arg, ta = call.args[index], _tensor(call.args[index])
            rank = len(_tensor(call).shape)  # type: ignore[union-attr]
            missing = rank - len(ta.shape)  # type: ignore[union-attr]
            parts.append(op.expand_dims(arg, axis=0, num_newaxis=missing) if missing else arg)
        return op.stack(parts, axis=0)

    def outputs(self, merged: Expr, lasts: Sequence[Call], pos: int) -> list[Expr]:
        parts = op.split(merged, len(lasts), axis=0).astuple()
        return [op.squeeze(TupleGetItem(parts, k), axis=[0]) for k in range(len(lasts))]


def combine_parallel_dense(expr: Expr, min_num_branches: int = 3, to_batch: bool = False) -> Expr:
    """``expr`` with groups of ``nn.dense`` on one input merged (module docs)."""
    combiner = DenseToBatchCombiner() if to_batch else DenseToDenseCombiner()
    return combine_parallel(expr, combiner, min_num_branches)


class CombineParallelDense(FunctionPass):
    """``relay.transform.CombineParallelDense(min_num_branches=3, to_batch=True)``
    (opt_level 4): see the module docs."""

    def __init__(self, min_num_branches: int = 3, to_batch: bool = True) -> None:
        self.min_num_branches = int(min_num_branches)
        self.to_batch = bool(to_batch)
        super().__init__(self._transform, opt_level=4, name="CombineParallelDense")

    def _transform(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = combine_parallel_dense(fn, self.min_num_branches, self.to_batch)
        return out if isinstance(out, Function) else fn
