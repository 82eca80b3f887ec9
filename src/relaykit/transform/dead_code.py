"""``DeadCodeElimination``: drop ``let`` bindings nobody uses, and optionally inline
those used exactly once.

A dataflow graph has no dead nodes by construction (only what the result
reaches exists); dead code lives in ``let`` bindings. Operators are pure, so
an unused binding can go. With ``inline_once=True`` a binding used once is
substituted at its use (functions stay bound). One post-order walk: linear.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x, t = relay.var("x", shape=(2,)), relay.var("t")
>>> f = relay.Function([x], relay.Let(t, relay.exp(x), x))
>>> print(DeadCodeElimination()(IRModule.from_expr(f))["main"].body)
free_var %x: Tensor[(2), float32];
%x
"""

from __future__ import annotations

from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Expr, Function, Let, Var
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule

from ._let_inline import remove_lets
from ._uses import use_counts
from .pass_infra import FunctionPass, PassContext
from .purity import impure_lets

__all__ = ["DeadCodeElimination", "dead_code_elimination"]


def _captured(expr: Expr) -> set[Var]:
    """Variables used inside a function nested in ``expr`` but bound outside it."""
    out: set[Var] = set()
    for node in post_order(expr):
        if type(node) is Function:
            out.update(free_vars(node))
    return out


def dead_code_elimination(
    expr: Expr,
    inline_once: bool = False,
    mod: IRModule | None = None,
    ignore_impurity: bool = False,
) -> Expr:
    """``expr`` without unused let bindings (and single-use ones inlined if asked).

    A binding is live if its body uses it: a function that only calls itself is
    dead. Inlining never moves a value into a nested function (that would run it
    once per call instead of once). A binding whose value has side effects (see
    :mod:`relaykit.transform.purity`; ``mod`` gives the global functions) stays where it
    is, used or not (unless ``ignore_impurity``, as TVM's option).
    """
    while True:
        out = _eliminate_once(expr, inline_once, mod, ignore_impurity)
        if out is expr or _let_count(out) == _let_count(expr):
            return out
        expr = out  # a binding whose only uses were dead may be dead now


def _let_count(expr: Expr) -> int:
    return sum(1 for node in post_order(expr) if type(node) is Let)


def _eliminate_once(
    expr: Expr, inline_once: bool, mod: IRModule | None, ignore_impurity: bool
) -> Expr:
    uses = use_counts(expr)
    captured = _captured(expr) if inline_once else set()
    impure = set() if ignore_impurity else impure_lets(expr, mod)

    def drop(let: Let) -> bool:
        if let in impure:
            return False
        n = uses.get(let.var, 0)
        if n and type(let.value) is Function:
            n -= use_counts(let.value).get(let.var, 0)  # recursive self-calls
        if n == 0:
            return True
        return (
            inline_once and n == 1 and type(let.value) is not Function and let.var not in captured
        )

    return remove_lets(expr, drop)


class DeadCodeElimination(FunctionPass):
    """``relay.transform.DeadCodeElimination(inline_once=False)`` (opt_level 1)."""

    def __init__(self, inline_once: bool = False, ignore_impurity: bool = False) -> None:
        self.inline_once = inline_once
        self.ignore_impurity = ignore_impurity
        super().__init__(self._transform, opt_level=1, name="DeadCodeElimination")

    def _transform(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = dead_code_elimination(fn, self.inline_once, mod, ignore_impurity=self.ignore_impurity)
        return out if isinstance(out, Function) else fn
