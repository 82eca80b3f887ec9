"""Iterative traversal: post-order walks, visitors and mutators.

No traversal here recurses on the depth of the graph. ``ExprVisitor`` and
``ExprMutator`` keep TVM's interface (override ``visit_call`` and friends, call
``super().visit_call(call)``), but they run an explicit post-order worklist
first, so every child is already visited (memoised) when a parent's
``visit_*`` method runs. The one visible difference from TVM's recursive
visitors: ``visit_*`` methods are called children-first, in program order.

>>> from relaykit.ir import Var, TensorType
>>> x = Var("x", TensorType((2,)))
>>> names = []
>>> post_order_visit(x + x, lambda n: names.append(type(n).__name__))
>>> names
['Op', 'Var', 'Call']
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from relaykit.errors import IRError

from .expr import Expr
from .fields import CHILDREN_OF, REBUILD_OF

__all__ = [
    "children",
    "post_order",
    "post_order_visit",
    "rebuild",
    "rewrite_post_order",
    "ExprVisitor",
    "ExprMutator",
    "ExprFunctor",
]


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``expr``, in field order (from its class's
    field declaration)."""
    fn = CHILDREN_OF.get(type(expr))
    if fn is None:
        raise IRError(f"not a relay expression: {expr!r}")
    return fn(expr)


def post_order(root: Expr, skip: Callable[[Expr], bool] | None = None) -> Iterator[Expr]:
    """Yield every node reachable from ``root`` once, children before parents.

    ``skip(node)`` may return True to not descend into (nor yield) a node.
    """
    visited: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    get = CHILDREN_OF.__getitem__
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        key = id(node)
        if key in visited:
            continue
        if skip is not None and skip(node):
            visited.add(key)
            continue
        visited.add(key)
        stack.append((node, True))
        for child in reversed(get(type(node))(node)):
            if id(child) not in visited:
                stack.append((child, False))


def post_order_visit(expr: Expr, fvisit: Callable[[Expr], Any]) -> None:
    """Call ``fvisit`` on every node of ``expr`` once, in post-order (TVM's
    ``relay.analysis.post_order_visit``)."""
    for node in post_order(expr):
        fvisit(node)


def rebuild(node: Expr, new: Callable[[Expr], Expr]) -> Expr:
    """``node`` with each child ``c`` replaced by ``new(c)`` (``node`` itself if none changed).

    The new node is built by the public constructor (so the new children are
    checked) and keeps ``node``'s span; it has no checked type yet.
    """
    return REBUILD_OF[type(node)](node, new)


def rewrite_post_order(
    root: Expr,
    fpost: Callable[[Expr, Expr], Expr | None],
    memo: dict[Expr, Expr] | None = None,
) -> Expr:
    """Rebuild ``root`` bottom-up. For each node, its children are rewritten first;
    ``fpost(rebuilt, original)`` may return a replacement (or None to keep ``rebuilt``).
    """
    memo = {} if memo is None else memo
    lookup = memo.__getitem__
    for node in post_order(root, skip=lambda n: n in memo):
        rebuilt = rebuild(node, lookup)
        out = fpost(rebuilt, node)
        memo[node] = rebuilt if out is None else out
    return memo[root]


def _method_name(expr: Expr) -> str:
    name: str | None = getattr(type(expr), "_visitor_name", None)
    if name is None:
        raise IRError(f"not a relay expression: {expr!r}")
    return name


class ExprFunctor:
    """Memoising dispatcher: ``visit(expr)`` calls ``visit_<kind>(expr)`` once per node."""

    _PENDING = object()

    def __init__(self) -> None:
        self.memo_map: dict[Expr, Any] = {}

    def visit(self, expr: Expr) -> Any:
        memo = self.memo_map
        if expr in memo:
            out = memo[expr]
            if out is ExprFunctor._PENDING:
                raise IRError(f"cycle in the expression graph at {type(expr).__name__}")
            return out
        # Visit everything below first, iteratively, so that the visit_* methods
        # below only ever find memoised children.
        for node in post_order(expr, skip=lambda n: n in memo):
            memo[node] = ExprFunctor._PENDING
            memo[node] = getattr(self, _method_name(node))(node)
        return memo[expr]

    def visit_var(self, node: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not visit {type(node).__name__}")

    visit_constant = visit_global_var = visit_op = visit_var
    visit_call = visit_tuple = visit_tuple_getitem = visit_function = visit_var
    visit_let = visit_if = visit_var
    visit_ref_create = visit_ref_read = visit_ref_write = visit_var
    visit_constructor = visit_match = visit_clause = visit_var


def _visit_children(self: ExprFunctor, node: Any) -> None:
    for child in children(node):
        self.visit(child)


def _rebuild_children(self: ExprFunctor, node: Any) -> Expr:
    return rebuild(node, self.visit)


def _leaf(self: ExprFunctor, node: Any) -> Any:
    return None


def _same(self: ExprFunctor, node: Any) -> Any:
    return node


class ExprVisitor(ExprFunctor):
    """Visit every node once; override ``visit_call`` etc. and call ``super()``.

    The default of every ``visit_*`` visits the node's children (none for leaves).
    """

    visit_var = visit_constant = visit_global_var = visit_op = _leaf
    visit_call = visit_tuple = visit_tuple_getitem = visit_function = _visit_children

    def visit(self, expr: Expr) -> Any:
        # A node met again while its own visit is under way (a visitor that walks into
        # the module's function of a global from inside it): already being visited, as
        # TVM's ExprVisitor counts it.
        if self.memo_map.get(expr, None) is ExprFunctor._PENDING:
            return None
        return super().visit(expr)

    visit_let = visit_if = _visit_children
    visit_ref_create = visit_ref_read = visit_ref_write = _visit_children
    visit_constructor = _leaf
    visit_match = visit_clause = _visit_children


class ExprMutator(ExprFunctor):
    """Rebuild an expression; unchanged subtrees are returned as they are.

    The default of every ``visit_*`` rebuilds the node from its visited children.
    """

    visit_var = visit_constant = visit_global_var = visit_op = _same
    visit_call = visit_tuple = visit_tuple_getitem = visit_function = _rebuild_children
    visit_let = visit_if = _rebuild_children
    visit_ref_create = visit_ref_read = visit_ref_write = _rebuild_children
    visit_constructor = _same
    visit_match = visit_clause = _rebuild_children
