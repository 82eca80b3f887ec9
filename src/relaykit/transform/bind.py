"""Binding: substitute variables, and bind parameters to constants.

>>> import numpy as np
>>> from relaykit.ir import Var, Function, TensorType
>>> x, w = Var("x", TensorType((2,))), Var("w", TensorType((2,)))
>>> f = bind_params_by_name(Function([x, w], x + w), {"w": np.ones(2, "float32")})
>>> [p.name_hint for p in f.params]
['x']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.expr import Constant, Expr, Function, Var, const
from relaykit.ir.functor import rewrite_post_order
from relaykit.runtime.ndarray import NDArray

__all__ = ["bind", "bind_params_by_name"]


def _as_expr(value: Any) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, NDArray):
        return Constant(value)
    return const(value)


def bind(expr: Expr, binds: Mapping[Var, Any]) -> Expr:
    """Replace each variable in ``binds`` by its value (TVM's ``relay.bind``).

    Binding a function's parameter removes it from the parameter list.
    """
    table: dict[Expr, Expr] = {}
    for var, value in binds.items():
        if not isinstance(var, Var):
            raise IRError(f"bind keys must be relay Vars, got {var!r}")
        table[var] = _as_expr(value)
    memo: dict[Expr, Expr] = dict(table)

    def post(new: Expr, old: Expr) -> Expr | None:
        if isinstance(new, Function) and isinstance(old, Function):
            kept = [p for p in old.params if p not in table]
            if len(kept) != len(old.params):
                return Function(kept, new.body, new.ret_type, new.type_params, new.attrs, new.span)
        return None

    if isinstance(expr, Function):
        # Params are bound names, not uses: keep them out of the memo walk.
        body = rewrite_post_order(expr.body, lambda n, o: None, memo)
        kept = [p for p in expr.params if p not in table]
        return expr.with_fields(params=kept, body=body)
    return rewrite_post_order(expr, post, memo)


def bind_params_by_name(func: Function, params: Mapping[str, Any]) -> Function:
    """Bind the parameters of ``func`` named in ``params`` to constants."""
    if not isinstance(func, Function):
        raise IRError(f"bind_params_by_name takes a Function, got {type(func).__name__}")
    by_name: dict[str, Var] = {}
    duplicates: set[str] = set()
    for p in func.params:
        if p.name_hint in by_name:
            duplicates.add(p.name_hint)
        by_name[p.name_hint] = p
    binds: dict[Var, Any] = {}
    for name, value in params.items():
        if name in duplicates:
            raise IRError(f"several parameters are named {name!r}; bind them by Var instead")
        var = by_name.get(name)
        if var is not None:
            binds[var] = value
    return bind(func, binds)  # type: ignore[return-value]
