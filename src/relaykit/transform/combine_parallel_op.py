"""Parallel-branch combining in TVM's form: branches that start with the same
operator on the same input, and continue with the same elementwise/broadcast operators,
become one wider branch whose result is cut back with ``strided_slice``
(``slice_mode="size"``, begin/end up to the channel axis).

A branch is a chain from a root call (``nn.conv2d``, ``nn.batch_matmul``) through
each call that is its only consumer and is elementwise or broadcast. The roots of a
group are merged by the operator's :class:`Combiner`; each following depth is merged
while every branch of the group has a call there with the same operator and
attributes, and its other arguments carry the channels on the same axis (they are
concatenated along it). One post-order walk to find branches, one rewrite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaykit import op
from relaykit.errors import IRError
from relaykit.ir.expr import Call, Expr, checked_type_or_none
from relaykit.ir.functor import children, post_order, rewrite_post_order
from relaykit.ir.op import Op, default_registry
from relaykit.ir.structural import structural_equal
from relaykit.ir.types import TensorType
from relaykit.op.define import OpPattern

from .infer_type import infer_type

__all__ = ["Combiner", "combine_parallel"]


class Combiner:
    """How one root operator's parallel calls are grouped and merged."""

    op_name = ""
    #: concatenate followers' arguments on a negative axis (from the end) if True
    negative_arg_axis = False

    def key(self, call: Call) -> Any:
        """Calls with equal keys (and the same first argument) merge; None: never."""
        raise NotImplementedError

    def merge(self, group: Sequence[Call]) -> Call:
        """One call computing every member's output, side by side on the channel axis."""
        raise NotImplementedError

    def channel_pos(self, call: Call) -> int:
        """The channel axis of ``call``'s output."""
        raise NotImplementedError

    def follows(self, call: Call) -> bool:
        """Whether ``call`` may continue a branch (elementwise or broadcast)."""
        return _elementwise(call)

    def next_pos(self, call: Call, pos: int) -> int:
        """The channel axis of ``call``'s output, given the one of its branch input."""
        return pos

    def arg_compatible(self, call: Call, first: Call, index: int, pos: int) -> bool:
        """Whether argument ``index`` of ``call`` merges with the first branch's."""
        ta, tb = _tensor(call.args[index]), _tensor(first.args[index])
        if ta is None or tb is None or ta.dtype != tb.dtype or len(ta.shape) != len(tb.shape):
            return False
        axis = _arg_axis(call, index, pos)
        if axis is None or _arg_axis(first, index, pos) != axis:
            return False
        return all(
            k == axis or structural_equal(ta.shape[k], tb.shape[k]) for k in range(len(ta.shape))
        )

    def merge_arg(self, calls: Sequence[Call], index: int, pos: int) -> Expr:
        """Argument ``index`` of the merged follower, from the branches' ``calls``."""
        first = calls[0]
        axis = _arg_axis(first, index, pos)
        if axis is None:
            raise IRError(f"argument {index} of {first.op} does not carry the channels")
        rank = len(_tensor(first.args[index]).shape)  # type: ignore[union-attr]
        cat_axis = axis - rank if self.negative_arg_axis else axis
        return op.concatenate([c.args[index] for c in calls], axis=cat_axis)

    def outputs(self, merged: Expr, lasts: Sequence[Call], pos: int) -> list[Expr]:
        """Each branch's result cut from ``merged`` (``lasts``: the branches' last calls)."""
        out: list[Expr] = []
        offset = 0
        for last in lasts:
            width = _tensor(last).shape[pos]  # type: ignore[union-attr]
            begin = [0] * pos + [offset]
            end = [-1] * pos + [width]
            out.append(
                op.strided_slice(
                    merged, begin=begin, end=end, strides=[1] * (pos + 1), slice_mode="size"
                )
            )
            offset += int(width)
        return out


def _tensor(e: Expr) -> TensorType | None:
    t = checked_type_or_none(e)
    return t if isinstance(t, TensorType) else None


def _elementwise(call: Call) -> bool:
    if type(call.op) is not Op:
        return False
    try:
        pattern = default_registry.get_attr(call.op.name, "TOpPattern")
    except Exception:  # no pattern: opaque
        return False
    return pattern is not None and int(pattern) <= int(OpPattern.BROADCAST)


def _branches(expr: Expr, combiner: Combiner) -> list[list[list[Call]]]:
    uses: dict[int, list[Expr]] = {}
    roots: list[Call] = []
    for node in post_order(expr):
        for child in children(node):
            uses.setdefault(id(child), []).append(node)
        if type(node) is Call and type(node.op) is Op and node.op.name == combiner.op_name:
            roots.append(node)
    groups: dict[Any, list[list[Call]]] = {}
    for root in roots:
        key = combiner.key(root)
        if key is None:
            continue
        branch = [root]
        while True:
            consumers = uses.get(id(branch[-1]), [])
            nxt = consumers[0] if len(consumers) == 1 else None
            if type(nxt) is not Call or not combiner.follows(nxt):
                break
            branch.append(nxt)
        groups.setdefault((id(root.args[0]), key), []).append(branch)
    return list(groups.values())


def _arg_axis(call: Call, index: int, channel_pos: int) -> int | None:
    """The axis of argument ``index`` of ``call`` that carries the output's channels."""
    ta, tout = _tensor(call.args[index]), _tensor(call)
    if ta is None or tout is None:
        return None
    axis = channel_pos - len(tout.shape) + len(ta.shape)
    if axis < 0 or not structural_equal(ta.shape[axis], tout.shape[channel_pos]):
        return None
    return axis


def _level_ok(group: list[list[Call]], depth: int, pos: int, combiner: Combiner) -> bool:
    first = group[0][depth]
    parent = next((i for i, a in enumerate(first.args) if a is group[0][depth - 1]), None)
    if parent is None:
        return False
    for branch in group:
        call = branch[depth]
        if (
            call.op is not first.op
            or len(call.args) != len(first.args)
            or call.args[parent] is not branch[depth - 1]
            or not structural_equal(call.attrs, first.attrs)
        ):
            return False
        for i in range(len(call.args)):
            if i != parent and not combiner.arg_compatible(call, first, i, pos):
                return False
    return True


def combine_parallel(expr: Expr, combiner: Combiner, min_num_branches: int) -> Expr:
    """``expr`` with each group of at least ``min_num_branches`` parallel branches merged.

    One group at a time, the earliest first, so that a group whose input is another
    group's result sees that result already merged."""
    while True:
        infer_type(expr)
        group = next((g for g in _branches(expr, combiner) if len(g) >= min_num_branches), None)
        if group is None:
            return expr
        expr = _combine_group(expr, group, combiner)


def _combine_group(expr: Expr, group: list[list[Call]], combiner: Combiner) -> Expr:
    merged: Expr = combiner.merge([b[0] for b in group])
    pos = combiner.channel_pos(group[0][0])
    depth = 1
    while all(len(b) > depth for b in group):
        next_pos = combiner.next_pos(group[0][depth], pos)
        if not _level_ok(group, depth, next_pos, combiner):
            break
        pos = next_pos
        first = group[0][depth]
        calls = [b[depth] for b in group]
        args: list[Expr] = [
            merged if arg is group[0][depth - 1] else combiner.merge_arg(calls, i, pos)
            for i, arg in enumerate(first.args)
        ]
        merged = Call(first.op, args, first.attrs)
        depth += 1
    lasts = [b[depth - 1] for b in group]
    replace: dict[Expr, Expr] = dict(zip(lasts, combiner.outputs(merged, lasts, pos), strict=True))
    return rewrite_post_order(expr, lambda new, old: replace.get(old))
