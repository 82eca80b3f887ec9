"""The units measured placement places: the calls of ``main``, in a topological order.

After every target's optimize hook and ``MergeComposite`` with every target's
patterns, each call of ``main`` (an operator call, or a composite call standing
for its whole pattern) is one *unit*. Tuples and tuple projections are not
units: they follow the values they hold. Any contiguous run of the order is
convex (a path between two of its units stays inside it), so regions cut from
runs never form a cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from relaykit.backends import get_backend
from relaykit.byoc.pins import HOST
from relaykit.byoc.rules import check_op
from relaykit.ir.expr import Call, Expr, Function, Tuple, TupleGetItem
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op

__all__ = ["Unit", "UnitGraph", "unit_graph", "supports"]


@dataclass(frozen=True)
class Unit:
    """One call of ``main``: its position, the call, its operator or composite name,
    and the targets that can run it (the host always can)."""

    index: int
    call: Call
    name: str
    targets: frozenset[str]


@dataclass
class UnitGraph:
    """The units of one function and who uses whose values."""

    func: Function
    units: list[Unit]
    index_of: dict[Expr, int] = field(default_factory=dict)
    #: unit index -> indices of the units using its value
    users: list[set[int]] = field(default_factory=list)
    #: units whose value (or a field of it) the function returns
    returned: set[int] = field(default_factory=set)

    def producers(self, expr: Expr) -> list[int]:
        """The units whose values ``expr`` reads, through tuples and projections."""
        out: list[int] = []
        stack = [expr]
        while stack:
            e = stack.pop()
            if e in self.index_of:
                out.append(self.index_of[e])
            elif isinstance(e, Tuple):
                stack.extend(e.fields)
            elif isinstance(e, TupleGetItem):
                stack.append(e.tuple_value)
        return out


def _composite(call: Call) -> str | None:
    if isinstance(call.op, Function):
        name = call.op.attrs.get("Composite")
        return None if name is None else str(name)
    return None


def _inner_calls(fn: Function) -> list[Call]:
    return [n for n in post_order(fn.body) if isinstance(n, Call)]


def supports(target: str, call: Call) -> bool:
    """Whether ``target`` can run ``call``: its rule accepts the operator; a composite
    goes to its own target, or to a target that exports composites as their bodies
    (``options["inline_composites"]``) when it accepts every operator inside."""
    if target == HOST:
        return True
    comp = _composite(call)
    if comp is not None:
        if comp.split(".", 1)[0] == target:
            return True
        if not get_backend(target).options.get("inline_composites"):
            return False
        assert isinstance(call.op, Function)
        return all(supports(target, c) for c in _inner_calls(call.op))
    if not isinstance(call.op, Op):
        return False
    return check_op(call, target).accepted


def unit_graph(func: Function, targets: Sequence[str]) -> UnitGraph:
    """The units of ``func`` (typed, composites merged) and which of ``targets`` run each."""
    nodes = post_order(func.body, skip=lambda n: isinstance(n, Function))
    calls = [n for n in nodes if isinstance(n, Call)]
    units = []
    for i, call in enumerate(calls):
        comp = _composite(call)
        name = comp if comp is not None else str(getattr(call.op, "name", "call"))
        ok = frozenset(t for t in targets if supports(t, call)) | {HOST}
        units.append(Unit(i, call, name, ok))
    graph = UnitGraph(func, units, {u.call: u.index for u in units}, [set() for _ in units])
    for u in units:
        for arg in u.call.args:
            for p in graph.producers(arg):
                graph.users[p].add(u.index)
    graph.returned = set(graph.producers(func.body))
    return graph
