"""Operator-hook passes: ``Legalize`` and ``CanonicalizeOps`` (``AlterOpLayout``, which
also moves layouts, is in :mod:`relaykit.transform.layout`).

``Legalize`` calls a per-operator hook (an attribute of the
operator, TVM's ``FTVMLegalize``) on every call of that
operator and put the expression it returns in the call's place; a hook returning
``None`` keeps the call. The hooks are registered with
``relay.op.register_legalize`` or, for the span of a
``with`` block, ``relay.testing.temp_op_attr.TempOpAttr``.

- ``Legalize`` hooks get ``(attrs, inputs, types)``: the call's attributes, its
  (rewritten) arguments and the types of the arguments followed by the output type.

``CanonicalizeOps`` writes ``nn.bias_add(x, b, axis)`` as
``add(x, expand_dims(b, axis=1, num_newaxis=ndim - axis - 1))``, the form TVM's pass
gives, so later passes see one kind of broadcast addition.

Functions handed to a backend and composite functions are left as they are.

>>> import numpy as np
>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(1, 3, 4, 4))
>>> b = relay.var("b", shape=(3,))
>>> mod = IRModule.from_expr(relay.Function([x, b], relay.nn.bias_add(x, b)))
>>> with relay.transform.PassContext(opt_level=3):
...     body = CanonicalizeOps()(mod)["main"].body
>>> body.op.name, body.args[1].op.name, body.args[1].attrs.num_newaxis
('add', 'expand_dims', 2)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none
from relaykit.ir.op import Op, default_registry
from relaykit.ir.types import TensorType
from relaykit.op import add, expand_dims

from .fold_constant import rewrite_outside_opaque
from .infer_type import infer_type
from .pass_infra import FunctionPass

__all__ = [
    "Legalize",
    "CanonicalizeOps",
    "legalize",
    "canonicalize_ops",
]


def _hook(call: Expr, key: str) -> Callable[..., Any] | None:
    if type(call) is not Call or type(call.op) is not Op:
        return None
    fn = default_registry.get_attr(call.op.name, key)
    return fn if callable(fn) else None


def _arg_types(old: Call) -> list[Any]:
    return [checked_type_or_none(a) for a in old.args]


def _typed(expr: Expr) -> None:
    if not expr.has_checked_type:
        infer_type(expr)


def _run_hooks(
    expr: Expr, key: str, invoke: Callable[[Callable[..., Any], Call, Call], Expr | None]
) -> Expr:
    """``expr`` with every call whose operator has the hook ``key`` replaced by what
    ``invoke(hook, new_call, old_call)`` returns (``None`` keeps the call)."""
    if not default_registry.attr_table(key):
        return expr
    _typed(expr)

    def post(new: Expr, old: Expr) -> Expr | None:
        hook = _hook(new, key)
        if hook is None:
            return None
        return invoke(hook, new, old)  # type: ignore[arg-type]

    return rewrite_outside_opaque(expr, post)


def legalize(expr: Expr, key: str = "FTVMLegalize") -> Expr:
    """``expr`` with each call replaced by the result of its operator's hook ``key``."""

    def invoke(hook: Callable[..., Any], new: Call, old: Call) -> Expr | None:
        types = [*_arg_types(old), checked_type_or_none(old)]
        out = hook(new.attrs, list(new.args), types)
        return out if isinstance(out, Expr) else None

    return _run_hooks(expr, key, invoke)


def canonicalize_ops(expr: Expr) -> Expr:
    """``expr`` with ``nn.bias_add`` written as ``add`` of the expanded bias."""
    _typed(expr)

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is not Call or type(new.op) is not Op or new.op.name != "nn.bias_add":
            return None
        ty = checked_type_or_none(old.args[0])  # type: ignore[attr-defined]
        if not isinstance(ty, TensorType) or not ty.shape:
            return None
        ndim = len(ty.shape)
        axis = int(new.attrs.axis) % ndim
        bias = new.args[1]
        pad = ndim - axis - 1
        if pad > 0:
            bias = expand_dims(bias, axis=1, num_newaxis=pad)
        return add(new.args[0], bias)

    return rewrite_outside_opaque(expr, post)


def _keep_function(out: Expr, fn: Function) -> Function:
    return out if isinstance(out, Function) else fn


class Legalize(FunctionPass):
    """``relay.transform.Legalize(legalize_map_attr_name="FTVMLegalize")`` (opt_level 1):
    see the module docs; the hooks are read from the operator attribute named."""

    def __init__(self, legalize_map_attr_name: str = "FTVMLegalize") -> None:
        key = str(legalize_map_attr_name)
        super().__init__(
            lambda fn, mod, ctx: _keep_function(legalize(fn, key), fn),
            opt_level=1,
            name="Legalize",
        )


class CanonicalizeOps(FunctionPass):
    """``relay.transform.CanonicalizeOps()`` (opt_level 3): see the module docs."""

    def __init__(self) -> None:
        super().__init__(
            lambda fn, mod, ctx: _keep_function(canonicalize_ops(fn), fn),
            opt_level=3,
            name="CanonicalizeOps",
        )
