"""How many kernel arguments a fused group takes, for ``FuseOps`` under a target that
limits them (``Target.max_function_args``: OpenCL, Metal).

A group's count starts as its nodes' own inputs that are variables or tuple projections
(each one buffer, plus, for a tensor with dynamic dimensions, its unknown sizes and its
strides) and adds up as groups merge. Before fusing a node into its post-dominator,
``FuseOps`` asks :func:`fused_args` for the count the consumer's group would reach and
refuses past :func:`args_limit` (the target's limit less the consumer's outputs). A
producer whose group has not been counted yet (no arguments so far: it is fused later
in the walk) makes the decision wait: :class:`ArgCounter` records it as postponed to the
consumer, and the fusion is tried again when the walk reaches the consumer.

>>> from relaykit.ir import TensorType
>>> from relaykit.ir.symbolic import Any
>>> extra_args(TensorType((Any(), 3)), strides=True), extra_args(TensorType((2, 3)), True)
(3, 0)
"""

from __future__ import annotations

from typing import Any as AnyType

from relaykit.ir.expr import Call, Expr, Tuple, TupleGetItem, Var, checked_type_or_none
from relaykit.ir.symbolic import Any
from relaykit.ir.types import TensorType, Type

__all__ = ["ArgCounter", "extra_args", "initial_args"]


def extra_args(typ: Type | None, strides: bool) -> int:
    """The arguments a tensor of type ``typ`` takes beyond its buffer: one per dynamic
    dimension, and (``strides``) one stride per dimension when any is dynamic."""
    if not isinstance(typ, TensorType):
        return 0
    dynamic = sum(1 for d in typ.shape if isinstance(d, Any))
    return dynamic + (len(typ.shape) if strides and dynamic else 0)


def _own(e: Expr) -> int:
    return 1 + extra_args(checked_type_or_none(e) or getattr(e, "type_annotation", None), True)


def _inputs(node: Expr) -> tuple[Expr, ...]:
    if isinstance(node, Call):
        return tuple(node.args)
    if isinstance(node, Tuple):
        return tuple(node.fields)
    return ()


def initial_args(node: Expr) -> int:
    """A node's own kernel arguments: its inputs that are variables or projections (a
    variable node counts itself)."""
    if isinstance(node, Var):
        return _own(node)
    return sum(_own(a) for a in _inputs(node) if isinstance(a, (Var, TupleGetItem)))


class ArgCounter:
    """Argument counts over ``FuseOps``' graph ``g`` and groups ``groups`` (with
    ``find`` and a per-record ``args`` list), for a limit of ``max_args``."""

    def __init__(self, g: AnyType, groups: AnyType, max_args: int) -> None:
        self.g = g
        self.groups = groups
        self.max_args = max_args
        #: the node whose count was incomplete in the last :meth:`fused_args`
        self.postpone: int | None = None
        #: consumer -> producers whose fusion waits for it
        self.postponed: dict[int, list[int]] = {}

    def count(self, src: int, postpone: bool) -> int:
        """The arguments of ``src``'s group with the groups of its inputs merged in (an
        input group not counted yet: ``src`` is postponed, or with ``postpone=False``
        that group's own inputs are counted instead)."""
        g, groups = self.g, self.groups
        total = 0
        stack = [src]
        while stack:
            s = stack.pop()
            total += groups.args[s]
            seen = {groups.find(s)}
            node = g.nodes[s]
            for a in _inputs(node):
                j = g.index.get(a)
                if isinstance(a, Var) or j is None:
                    continue
                root = groups.find(j)
                if root in seen:
                    continue
                seen.add(root)
                if groups.args[root] > 0:
                    total += groups.args[root]
                elif postpone:
                    self.postpone = s
                else:
                    stack.append(j)
        return total

    def limit(self, child: int) -> int:
        """The arguments left for ``child``'s consumer once its outputs are passed."""
        g = self.g
        outputs = 0
        for j, _ in g.outputs[child]:
            outputs += 1
            node = g.nodes[j]
            if isinstance(node, Call):
                outputs += extra_args(checked_type_or_none(node), strides=False)
        return self.max_args - outputs if self.max_args > outputs else 0

    def fused_args(self, child: int) -> int:
        """The most arguments any consumer of ``child`` would have with it fused in."""
        return max((self.count(j, postpone=True) for j, _ in self.g.outputs[child]), default=0)

    def too_many(self, child: int) -> bool:
        """Whether fusing ``child`` into its consumers would pass the target's limit."""
        if self.max_args <= 0:
            return False
        limit = self.limit(child)
        return limit > 0 and self.fused_args(child) > limit
