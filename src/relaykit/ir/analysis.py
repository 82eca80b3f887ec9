"""Variable analyses: free, bound and all variables of an expression.

>>> from relaykit.ir import Var, Function, TensorType
>>> x, y = Var("x", TensorType(())), Var("y", TensorType(()))
>>> [v.name_hint for v in free_vars(Function([x], x + y))]
['y']
"""

from __future__ import annotations

from typing import Any

from .adt import Clause, pattern_vars
from .expr import Expr, Function, Let, Var
from .functor import post_order

__all__ = ["free_vars", "bound_vars", "all_vars"]


def _vars(expr: Expr) -> tuple[list[Var], set[Var]]:
    """All variables (in post-order) and the set of those bound by a Function or Let."""
    seen: list[Var] = []
    bound: set[Var] = set()
    node: Any
    for node in post_order(expr):
        t = type(node)
        if t is Var:
            seen.append(node)
        elif t is Function:
            bound.update(node.params)
        elif t is Let:
            bound.add(node.var)
        elif t is Clause:
            bound.update(pattern_vars(node.lhs))
    return seen, bound


def free_vars(expr: Expr) -> list[Var]:
    """Variables used in ``expr`` but not bound inside it, in post-DFS order."""
    seen, bound = _vars(expr)
    return [v for v in seen if v not in bound]


def bound_vars(expr: Expr) -> list[Var]:
    """Variables bound by a ``Function`` or ``Let`` inside ``expr``, in post-DFS order."""
    seen, bound = _vars(expr)
    return [v for v in seen if v in bound]


def all_vars(expr: Expr) -> list[Var]:
    """Every variable of ``expr``, in post-DFS order."""
    return _vars(expr)[0]
