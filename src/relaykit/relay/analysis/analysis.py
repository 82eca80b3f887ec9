"""``tvm.relay.analysis.analysis``: analyses of variables, type variables and well-formedness.

>>> from relaykit import relay
>>> a = relay.TypeVar("a")
>>> x = relay.Var("x", a)
>>> [t.name_hint for t in free_type_vars(relay.Function([x], x))]
['a']
>>> well_formed(relay.Let(x, relay.const(1.0), relay.Let(x, relay.const(2.0), x)))
False
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.adt import Clause, TypeCall, pattern_vars
from relaykit.ir.analysis import all_vars, bound_vars, free_vars
from relaykit.ir.expr import Expr, Function, Let, Var
from relaykit.ir.functor import children, post_order, post_order_visit
from relaykit.ir.types import FuncType, TupleType, Type, TypeVar

__all__ = [
    "all_vars",
    "bound_vars",
    "free_vars",
    "post_order_visit",
    "all_type_vars",
    "bound_type_vars",
    "free_type_vars",
    "well_formed",
]


class _TypeVarWalk:
    """Type variables in visit order (TVM's: a function's type parameters, then its
    parameters, body and return type), and which of them are bound."""

    def __init__(self) -> None:
        self.order: list[TypeVar] = []
        self.bound: list[TypeVar] = []

    def _see(self, tv: TypeVar, binds: bool = False) -> None:
        if binds and tv not in self.bound:
            self.bound.append(tv)
        if tv not in self.order:
            self.order.append(tv)

    def walk_type(self, t: Any) -> None:
        if isinstance(t, TypeVar):
            self._see(t)
        elif isinstance(t, TupleType):
            for field in t.fields:
                self.walk_type(field)
        elif isinstance(t, FuncType):
            for tp in t.type_params:
                self._see(tp, binds=True)
            for arg in t.arg_types:
                self.walk_type(arg)
            self.walk_type(t.ret_type)
        elif isinstance(t, TypeCall):
            self.walk_type(t.func)
            for arg in t.args:
                self.walk_type(arg)

    def walk(self, root: Expr | Type) -> _TypeVarWalk:
        seen: set[int] = set()
        stack: list[Any] = [root]
        while stack:
            item = stack.pop()
            if isinstance(item, Type):
                self.walk_type(item)
                continue
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, Function):
                for tp in item.type_params:
                    self._see(tp, binds=True)
                if item.ret_type is not None:
                    stack.append(item.ret_type)
            elif isinstance(item, Var) and item.type_annotation is not None:
                stack.append(item.type_annotation)
            stack.extend(reversed(children(item)))
        return self


def free_type_vars(expr: Expr | Type, mod: Any = None) -> list[TypeVar]:
    """Type variables used in ``expr`` (or a type) but bound by no function inside it."""
    walk = _TypeVarWalk().walk(expr)
    return [tv for tv in walk.order if tv not in walk.bound]


def bound_type_vars(expr: Expr | Type, mod: Any = None) -> list[TypeVar]:
    """Type variables bound (as type parameters) inside ``expr`` or a type."""
    return _TypeVarWalk().walk(expr).bound


def all_type_vars(expr: Expr | Type, mod: Any = None) -> list[TypeVar]:
    """Every type variable of ``expr`` or a type, in visit order."""
    return _TypeVarWalk().walk(expr).order


def well_formed(expr: Expr) -> bool:
    """False if a variable is bound more than once in ``expr`` (by functions, lets or
    match clauses), as Relay requires every binding to introduce a fresh variable."""
    bound: set[Var] = set()
    node: Any
    for node in post_order(expr):
        if isinstance(node, Function):
            new = list(node.params)
        elif isinstance(node, Let):
            new = [node.var]
        elif isinstance(node, Clause):
            new = list(pattern_vars(node.lhs))
        else:
            continue
        for var in new:
            if var in bound:
                return False
            bound.add(var)
    return True
