"""``DivToMul``: ``x / c`` with a floating-point constant ``c`` becomes ``x * (1 / c)``.

The reciprocal is computed once, in ``c``'s dtype; a constant with a zero (or a
reciprocal that overflows) is left as a division. One post-order rewrite.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2,))
>>> out = DivToMul()(IRModule.from_expr(x / relay.const(4.0)))["main"].body
>>> out.op.name, float(out.args[1].data.numpy())
('multiply', 0.25)
"""

from __future__ import annotations

import numpy as np

from relaykit import op
from relaykit.ir.expr import Call, Constant, Expr, Function
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op

from .pass_infra import FunctionPass, PassContext

__all__ = ["DivToMul", "div_to_mul"]


def _reciprocal(c: Constant) -> Constant | None:
    value = c.data.numpy()
    if not np.issubdtype(value.dtype, np.floating) or np.any(value == 0):
        return None
    with np.errstate(over="ignore"):
        inv = (np.ones((), dtype=value.dtype) / value).astype(value.dtype)
    if not np.all(np.isfinite(inv)):
        return None
    return Constant(inv)


def div_to_mul(expr: Expr) -> Expr:
    """``expr`` with divisions by floating-point constants made multiplications."""

    def post(new: Expr, old: Expr) -> Expr | None:
        if (
            type(new) is Call
            and type(new.op) is Op
            and new.op.name == "divide"
            and type(new.args[1]) is Constant
        ):
            inv = _reciprocal(new.args[1])
            if inv is not None:
                return op.multiply(new.args[0], inv)
        return None

    return rewrite_post_order(expr, post)


class DivToMul(FunctionPass):
    """``relay.transform.DivToMul()`` (opt_level 0)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="DivToMul")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = div_to_mul(fn)
        return out if isinstance(out, Function) else fn
