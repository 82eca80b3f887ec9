"""``FoldConstant``: evaluate operator calls whose inputs are all constants.

Each such call is run once with its operator's reference kernel and replaced
by the resulting constant (a tuple of constants for multi-output operators);
``TupleGetItem`` of a tuple literal becomes the field. Annotations
(``annotation.*``), operators without inputs (``zeros``, ``full``..., cheaper
to keep than to store) and functions handed to a backend or marked
``Primitive``/``Composite`` are left alone, as in TVM. A call whose kernel
fails is kept, so the error surfaces, with its context, when the model runs.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2,))
>>> two = relay.add(relay.const([1.0, 1.0]), relay.const([1.0, 1.0]))
>>> mod = FoldConstant()(IRModule.from_expr(relay.Function([x], x * two)))
>>> mod["main"].body.args[1].data.numpy().tolist()
[2.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    Tuple,
    TupleGetItem,
    checked_type_or_none,
)
from relaykit.ir.functor import post_order, rebuild
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, TupleType

from .pass_infra import FunctionPass, PassContext

__all__ = ["FoldConstant", "fold_constant"]

_OPAQUE_FUNCTION_ATTRS = ("Primitive", "Composite", "Compiler")


def _is_opaque(fn: Function) -> bool:
    return any(k in fn.attrs for k in _OPAQUE_FUNCTION_ATTRS)


def _constant_value(e: Expr) -> Any:
    """The array (or tuple of arrays) of a constant or tuple of constants, else None."""
    if type(e) is Constant:
        return e.data.numpy()
    if type(e) is Tuple:
        vals = [_constant_value(f) for f in e.fields]
        if all(v is not None for v in vals):
            return tuple(vals)
    return None


def _matches(value: Any, ty: Any) -> bool:
    if ty is None:
        return True
    if isinstance(ty, TensorType):
        return (
            isinstance(value, np.ndarray)
            and value.shape == ty.shape
            and (value.dtype.name == ty.dtype)
        )
    if isinstance(ty, TupleType):
        return (
            isinstance(value, tuple)
            and len(value) == len(ty.fields)
            and all(_matches(v, t) for v, t in zip(value, ty.fields, strict=True))
        )
    return False


def _as_expr(value: Any) -> Expr:
    if isinstance(value, tuple):
        return Tuple([_as_expr(v) for v in value])
    return Constant(np.asarray(value, order="C"))


def _fold_call(new: Call, old: Call) -> Expr | None:
    op = new.op
    if type(op) is not Op or not new.args or op.name.startswith("annotation."):
        return None
    kernel = op.get_attr("FCompute")
    if kernel is None:
        return None
    args = [_constant_value(a) for a in new.args]
    if any(a is None for a in args):
        return None
    try:
        with np.errstate(all="ignore"):
            out = kernel(args, new.attrs)
    except Exception:  # keep the call: the error shows, with context, at run time
        return None
    if isinstance(out, list):
        out = tuple(out)
    if isinstance(out, np.generic):
        out = np.asarray(out)
    if not _matches(out, checked_type_or_none(old)):
        return None
    return _as_expr(out)


def rewrite_outside_opaque(expr: Expr, post: Callable[[Expr, Expr], Expr | None]) -> Expr:
    """``rewrite_post_order(expr, post)`` in one walk that does not enter functions for
    backends or composites (``Compiler``, ``Primitive``, ``Composite``), except ``expr``."""
    memo: dict[Expr, Expr] = {}

    def skip(node: Expr) -> bool:
        if node in memo:
            return True
        if type(node) is Function and node is not expr and _is_opaque(node):
            memo[node] = node
            return True
        return False

    lookup = memo.__getitem__
    for node in post_order(expr, skip=skip):
        rebuilt = rebuild(node, lookup)
        out = post(rebuilt, node)
        memo[node] = rebuilt if out is None else out
    return memo[expr]


def fold_constant(expr: Expr, mod: IRModule | None = None) -> Expr:
    """``expr`` with constant sub-expressions evaluated (TVM's ``relay.transform.FoldConstant``
    on one expression)."""
    if type(expr) is Function and _is_opaque(expr):
        return expr

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is Call:
            return _fold_call(new, old)  # type: ignore[arg-type]
        if type(new) is TupleGetItem and type(new.tuple_value) is Tuple:
            return new.tuple_value.fields[new.index]
        return None

    return rewrite_outside_opaque(expr, post)


class FoldConstant(FunctionPass):
    """``relay.transform.FoldConstant()`` (opt_level 2)."""

    def __init__(self, fold_qnn: bool = False) -> None:
        super().__init__(self._transform, opt_level=2, name="FoldConstant")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = fold_constant(fn, mod)
        return out if isinstance(out, Function) else fn
