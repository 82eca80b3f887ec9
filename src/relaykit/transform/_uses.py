"""Use counts of the nodes of an expression (how many parent edges point at each).

>>> from relaykit.ir import Var, TensorType
>>> x = Var("x", TensorType((2,)))
>>> y = x + x
>>> use_counts(y * y)[y]
2
"""

from __future__ import annotations

from relaykit.ir.expr import Expr, Function, Let
from relaykit.ir.functor import children, post_order

__all__ = ["use_counts"]


def use_counts(root: Expr) -> dict[Expr, int]:
    """For every node below ``root``, the number of edges that use it. The binding
    occurrences of variables (``Let.var``, function parameters) are not uses."""
    counts: dict[Expr, int] = {}
    for node in post_order(root):
        kids = children(node)
        if type(node) is Let:
            kids = (node.value, node.body)
        elif type(node) is Function:
            kids = (node.body,)
        for k in kids:
            counts[k] = counts.get(k, 0) + 1
    return counts
