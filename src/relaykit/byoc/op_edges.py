"""Which operator calls feed which: the data-flow edges between the calls of a function.

:func:`call_sources` gives, for every *labelled* call (an operator or composite
call that :func:`relaykit.byoc.explain` numbered), the labels of the labelled
calls each of its arguments reads, looking through tuples, tuple projections,
let-bindings and unlabelled calls. :func:`composite_inner_inputs` does the same
inside one composite function, for the operators it is drawn as. Both are
linear in the size of the function and iterative (no recursion on depth).

>>> from relaykit.ir import Call, Var, TensorType, get_op
>>> x = Var("x", TensorType((2,)))
>>> a = Call(get_op("abs"), [x])
>>> b = Call(get_op("add"), [a, a])
>>> labels = {a: 0, b: 1}
>>> call_sources(b, labels.get)
{0: [()], 1: [(0,), (0,)]}
"""

from __future__ import annotations

from collections.abc import Callable

from relaykit.ir.expr import Call, Expr, Function, Let, Var
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op

from ._common import data_children

__all__ = ["call_sources", "composite_inner_inputs"]


_Frontiers = dict[Expr, tuple[int, ...]]


def _composite_function(node: Expr) -> bool:
    return type(node) is Function and "Composite" in node.attrs


def _frontiers(
    body: Expr, label_of: Callable[[Call], int | None]
) -> tuple[_Frontiers, dict[Var, Expr], list[Call]]:
    """Per node, the labels of the nearest labelled calls it reads; the let-bound
    variables' values; and the labelled calls of ``body`` in post-order."""
    nodes = list(post_order(body, skip=_composite_function))
    # a let-bound variable reads its value (post-order visits the body before the Let)
    bound: dict[Var, Expr] = {n.var: n.value for n in nodes if type(n) is Let}
    memo: _Frontiers = {}
    labelled: list[Call] = []
    for node in nodes:
        if type(node) is Call:
            k = label_of(node)
            if k is not None:
                memo[node] = (k,)
                labelled.append(node)
                continue
        kids = data_children(node)
        if not kids:
            continue
        merged: dict[int, None] = {}
        for kid in kids:
            merged.update(dict.fromkeys(_lookup(memo, bound, kid)))
        if merged:
            memo[node] = tuple(merged)
    return memo, bound, labelled


def _lookup(memo: _Frontiers, bound: dict[Var, Expr], node: Expr) -> tuple[int, ...]:
    if type(node) is Var and node in bound:
        return memo.get(bound[node], ())
    return memo.get(node, ())


def call_sources(
    body: Expr, label_of: Callable[[Call], int | None]
) -> dict[int, list[tuple[int, ...]]]:
    """For every call of ``body`` that ``label_of`` labels: per argument, the labels
    of the labelled calls whose results that argument reads."""
    memo, bound, labelled = _frontiers(body, label_of)
    out: dict[int, list[tuple[int, ...]]] = {}
    for call in labelled:
        k = memo[call][0]
        out[k] = [_lookup(memo, bound, a) for a in call.args]
    return out


def composite_inner_inputs(fn: Function) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """For each operator call inside composite ``fn``, in post-order (the order
    :func:`relaykit.byoc.explain` lists them in): the positions (in that order) of
    the inner calls it reads, and the indices of the parameters of ``fn`` it reads."""
    order: dict[Call, int] = {}
    for node in post_order(fn.body):
        if type(node) is Call and type(node.op) is Op:
            order[node] = len(order)
    memo, bound, _ = _frontiers(fn.body, order.get)
    params = {p: i for i, p in enumerate(fn.params)}
    out: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for call in order:
        inner: dict[int, None] = {}
        outer: dict[int, None] = {}
        for a in call.args:
            inner.update(dict.fromkeys(_lookup(memo, bound, a)))
            for p in _params_read(a, params):
                outer[p] = None
        out.append((tuple(inner), tuple(outer)))
    return out


def _params_read(arg: Expr, params: dict[Var, int]) -> list[int]:
    """The parameters ``arg`` reads directly (through tuples and projections, but
    not through operator calls)."""
    found: list[int] = []
    stack = [arg]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is Var and node in params:
            found.append(params[node])
        elif not (type(node) is Call and type(node.op) is Op):
            stack.extend(data_children(node))
    return found
