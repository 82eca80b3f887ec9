"""Removing ``let`` bindings in one post-order walk, substituting their values.

The walk visits a ``Let``'s variable, then its value, then its body, so by
the time a use of the variable is rebuilt the (rewritten) value is known: the
use is looked up lazily. Shared by DeadCodeElimination and ToGraphNormalForm.
"""

from __future__ import annotations

from collections.abc import Callable

from relaykit.ir.expr import Expr, Let, Var
from relaykit.ir.functor import post_order, rebuild

__all__ = ["remove_lets"]

_LAZY = object()


def remove_lets(root: Expr, drop: Callable[[Let], bool]) -> Expr:
    """``root`` where every ``Let`` with ``drop(let)`` true is replaced by its body with
    the bound variable replaced by the value."""
    value_of: dict[Var, Expr] = {}
    for node in post_order(root):
        if type(node) is Let and drop(node):
            value_of[node.var] = node.value
    memo: dict[Expr, object] = {}

    def lookup(e: Expr) -> Expr:
        v = memo[e]
        if v is _LAZY:
            value = value_of[e]  # type: ignore[index]
            if value not in memo:
                # a dropped function's call to itself, met while rebuilding that very
                # function: it is dead code, so the variable may stay as it is
                return e
            return lookup(value)
        return v  # type: ignore[return-value]

    for node in post_order(root):
        if type(node) is Var and node in value_of:
            memo[node] = _LAZY
        elif type(node) is Let and node.var in value_of:
            memo[node] = lookup(node.body)
        else:
            memo[node] = rebuild(node, lookup)
    return lookup(root)
