"""``SimplifyExpr``: local algebraic simplifications (TVM's ``relay.transform.SimplifyExpr``).

The rewrites relaykit has so far:

- a chain of reshapes (``reshape`` / ``contrib_reverse_reshape``) becomes one
  ``reshape`` to the chain's static output shape;
- ``cast`` of a ``cast`` whose inner step does not narrow (every value survives it)
  becomes one ``cast``; a ``cast`` to the dtype the value already has goes.

A rewrite applies only where the types are static, so what is computed never changes.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2, 3, 4))
>>> f = relay.Function([x], relay.reshape(relay.reshape(x, (6, 4)), (4, -1)))
>>> body = SimplifyExpr()(IRModule.from_expr(f))["main"].body
>>> body.op.name, body.args[0].name_hint, body.attrs.newshape
('reshape', 'x', (4, 6))
"""

from __future__ import annotations

import numpy as np

from relaykit import op
from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType

from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["SimplifyExpr", "simplify_expr"]

RESHAPES = frozenset({"reshape", "contrib_reverse_reshape"})


def _name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _static(e: Expr) -> TensorType | None:
    ty = checked_type_or_none(e)
    return ty if isinstance(ty, TensorType) and ty.is_static else None


def _lossless(src: str, dst: str) -> bool:
    """Whether every value of dtype ``src`` survives a cast to ``dst``."""
    try:
        return bool(np.can_cast(np.dtype(src), np.dtype(dst), casting="safe"))
    except TypeError:  # a dtype NumPy does not know: assume it may lose values
        return False


def simplify_expr(expr: Expr, mod: IRModule | None = None) -> Expr:
    """``expr`` with the rewrites of the module docstring applied."""
    infer_type(expr, mod)

    def post(new: Expr, old: Expr) -> Expr | None:
        name = _name(new)
        if name in RESHAPES:
            inner = new.args[0]  # type: ignore[attr-defined]
            out_t = _static(old)
            if _name(inner) in RESHAPES and out_t is not None:
                return op.reshape(inner.args[0], out_t.shape)
        elif name == "cast":
            return _simplify_cast(new, old)  # type: ignore[arg-type]
        return None

    return rewrite_post_order(expr, post)


def _simplify_cast(new: Call, old: Call) -> Expr | None:
    value, old_value = new.args[0], old.args[0]
    value_t = checked_type_or_none(old_value)
    if not isinstance(value_t, TensorType):
        return None
    if value_t.dtype == new.attrs.dtype:
        return value
    if _name(value) == "cast":
        src_t = checked_type_or_none(old_value.args[0])  # type: ignore[attr-defined]
        if isinstance(src_t, TensorType) and _lossless(src_t.dtype, value_t.dtype):
            return op.cast(value.args[0], new.attrs.dtype)  # type: ignore[attr-defined]
    return None


class SimplifyExpr(FunctionPass):
    """``relay.transform.SimplifyExpr()`` (opt_level 0): see the module docstring."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="SimplifyExpr")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = simplify_expr(fn, mod)
        return out if isinstance(out, Function) else fn
