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

from .expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from .op import Op

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


def _no_children(e: Any) -> tuple[Expr, ...]:
    return ()


_CHILDREN: dict[type, Callable[[Any], tuple[Expr, ...]]] = {
    Var: _no_children,
    Constant: _no_children,
    GlobalVar: _no_children,
    Op: _no_children,
    Call: lambda e: (e.op, *e.args),
    Tuple: lambda e: e.fields,
    TupleGetItem: lambda e: (e.tuple_value,),
    Function: lambda e: (*e.params, e.body),
    Let: lambda e: (e.var, e.value, e.body),
    If: lambda e: (e.cond, e.true_branch, e.false_branch),
}


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``expr``, in field order."""
    try:
        return _CHILDREN[type(expr)](expr)
    except KeyError:
        for base, fn in _CHILDREN.items():
            if isinstance(expr, base):
                return fn(expr)
        raise TypeError(f"not a relay expression: {expr!r}") from None


def post_order(root: Expr, skip: Callable[[Expr], bool] | None = None) -> Iterator[Expr]:
    """Yield every node reachable from ``root`` once, children before parents.

    ``skip(node)`` may return True to not descend into (nor yield) a node.
    """
    visited: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    get = _CHILDREN.get
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
        fn = get(type(node))
        kids = fn(node) if fn is not None else children(node)
        for child in reversed(kids):
            if id(child) not in visited:
                stack.append((child, False))


def post_order_visit(expr: Expr, fvisit: Callable[[Expr], Any]) -> None:
    """Call ``fvisit`` on every node of ``expr`` once, in post-order (TVM's
    ``relay.analysis.post_order_visit``)."""
    for node in post_order(expr):
        fvisit(node)


def rebuild(node: Expr, new: Callable[[Expr], Expr]) -> Expr:
    """``node`` with each child ``c`` replaced by ``new(c)`` (``node`` itself if none changed)."""
    t = type(node)
    if t is Call:
        return node.with_fields(op=new(node.op), args=[new(a) for a in node.args])
    if t is Tuple:
        return node.with_fields(fields=[new(f) for f in node.fields])
    if t is TupleGetItem:
        return node.with_fields(tuple_value=new(node.tuple_value))
    if t is Function:
        return node.with_fields(params=[new(p) for p in node.params], body=new(node.body))
    if t is Let:
        return node.with_fields(var=new(node.var), value=new(node.value), body=new(node.body))
    if t is If:
        return node.with_fields(
            cond=new(node.cond),
            true_branch=new(node.true_branch),
            false_branch=new(node.false_branch),
        )
    return node


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


_DISPATCH = {
    Var: "visit_var",
    Constant: "visit_constant",
    GlobalVar: "visit_global_var",
    Op: "visit_op",
    Call: "visit_call",
    Tuple: "visit_tuple",
    TupleGetItem: "visit_tuple_getitem",
    Function: "visit_function",
    Let: "visit_let",
    If: "visit_if",
}


def _method_name(expr: Expr) -> str:
    name = _DISPATCH.get(type(expr))
    if name is None:
        for base, n in _DISPATCH.items():
            if isinstance(expr, base):
                return n
        raise TypeError(f"not a relay expression: {expr!r}")
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
                raise RuntimeError(f"cycle in the expression graph at {type(expr).__name__}")
            return out
        # Visit everything below first, iteratively, so that the visit_* methods
        # below only ever find memoised children.
        for node in post_order(expr, skip=lambda n: n in memo):
            memo[node] = ExprFunctor._PENDING
            memo[node] = getattr(self, _method_name(node))(node)
        return memo[expr]

    def visit_var(self, var: Var) -> Any:
        raise NotImplementedError

    visit_constant = visit_global_var = visit_op = visit_var
    visit_call = visit_tuple = visit_tuple_getitem = visit_function = visit_var
    visit_let = visit_if = visit_var


class ExprVisitor(ExprFunctor):
    """Visit every node once; override ``visit_call`` etc. and call ``super()``."""

    def visit_var(self, var: Var) -> None:
        return None

    def visit_constant(self, const: Constant) -> None:
        return None

    def visit_global_var(self, gv: GlobalVar) -> None:
        return None

    def visit_op(self, op: Op) -> None:
        return None

    def visit_call(self, call: Call) -> None:
        self.visit(call.op)
        for a in call.args:
            self.visit(a)

    def visit_tuple(self, tup: Tuple) -> None:
        for f in tup.fields:
            self.visit(f)

    def visit_tuple_getitem(self, t: TupleGetItem) -> None:
        self.visit(t.tuple_value)

    def visit_function(self, fn: Function) -> None:
        for p in fn.params:
            self.visit(p)
        self.visit(fn.body)

    def visit_let(self, let: Let) -> None:
        self.visit(let.var)
        self.visit(let.value)
        self.visit(let.body)

    def visit_if(self, ite: If) -> None:
        self.visit(ite.cond)
        self.visit(ite.true_branch)
        self.visit(ite.false_branch)


class ExprMutator(ExprFunctor):
    """Rebuild an expression; unchanged subtrees are returned as they are."""

    def visit_var(self, var: Var) -> Expr:
        return var

    def visit_constant(self, const: Constant) -> Expr:
        return const

    def visit_global_var(self, gv: GlobalVar) -> Expr:
        return gv

    def visit_op(self, op: Op) -> Expr:
        return op

    def visit_call(self, call: Call) -> Expr:
        return rebuild(call, self.visit)

    def visit_tuple(self, tup: Tuple) -> Expr:
        return rebuild(tup, self.visit)

    def visit_tuple_getitem(self, t: TupleGetItem) -> Expr:
        return rebuild(t, self.visit)

    def visit_function(self, fn: Function) -> Expr:
        return rebuild(fn, self.visit)

    def visit_let(self, let: Let) -> Expr:
        return rebuild(let, self.visit)

    def visit_if(self, ite: If) -> Expr:
        return rebuild(ite, self.visit)
