"""``SimplifyExpr``: local algebraic simplifications, as TVM's pass of that name.

The rules (:mod:`relaykit.transform.simplify_rules`, in TVM's order) each rewrite
one call; a round applies each rule over the whole expression in turn (types
re-inferred between rules), and rounds repeat until nothing changes:

- ``zeros_like``, ``ones_like``, ``full_like``, ``reshape_like``, ``collapse_sum_like``,
  ``broadcast_to_like`` with a static result shape, and ``cast_like``, become their
  explicit-shape (or explicit-dtype) forms;
- ``x + x`` becomes ``x * 2``; ``n / sqrt(x)`` becomes ``n * rsqrt(x)``;
- ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1`` (scalar constants, ``zeros``/``ones`` and
  their ``_like`` forms) become ``x`` when ``x`` has the result's type (a tensor
  constant of zeros is kept: it may be a bias a pattern expects);
- reshape chains become one reshape; transposes and layout_transforms next to each
  other become one (or none); a shape operator that changes nothing disappears;
- a cast to the dtype it already has disappears, and a cast of a cast that keeps
  every value (``int8 -> int32 -> float32``) becomes one cast; casts after a clip
  whose dtype holds the clip's range disappear, as does a clip that bounds nothing;
- a broadcasting operator of a ``full``/``ones``/``zeros`` takes the fill value as a
  scalar when the other operand already has the result's shape;
- ``(x + c1) * c2`` becomes ``x * c2 + c1 * c2``, and ``(x * c1) * c2``, ``(x + c1) + c2``
  fold their constants;
- ``argmax``/``argmin``/``argsort`` of ``qnn.dequantize`` with a positive scale read
  the quantized tensor; ``a*x*x + b*x*y + c*y*y`` with real roots is factored.

Functions handed to a backend and composite functions are left as they are.

>>> import numpy as np
>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2, 6))
>>> y = relay.reshape(relay.reshape(x, (3, 4)), (12,)) * relay.const(1.0)
>>> body = SimplifyExpr()(IRModule.from_expr(relay.Function([x], y)))["main"].body
>>> body.op.name, body.args[0] is x, body.attrs.newshape
('reshape', True, [12])
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.expr import Call, Expr, Function
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.structural import structural_equal

from .fold_constant import rewrite_outside_opaque
from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext
from .simplify_rules import RULES

__all__ = ["SimplifyExpr", "simplify_expr"]

_MAX_ROUNDS = 100


def _apply(expr: Expr, rule: Any) -> Expr:
    if not expr.has_checked_type:
        infer_type(expr)

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is not Call or type(new.op) is not Op:
            return None
        return rule(new, old)

    return rewrite_outside_opaque(expr, post)


def simplify_expr(expr: Expr, rules: Any = RULES) -> Expr:
    """``expr`` with the module docs' simplifications applied until none applies."""
    for _ in range(_MAX_ROUNDS):
        last = expr
        for rule in rules:
            expr = _apply(expr, rule)
        if expr is last or structural_equal(expr, last):
            break
    if not expr.has_checked_type:
        infer_type(expr)
    return expr


class SimplifyExpr(FunctionPass):
    """``relay.transform.SimplifyExpr()`` (opt_level 0): see the module docs."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="SimplifyExpr")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = simplify_expr(fn)
        return out if isinstance(out, Function) else fn
