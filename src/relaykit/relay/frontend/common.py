"""``tvm.relay.frontend.common``: helpers that importers (and scripts) use to look at
the graph they are building: infer an expression's type or shape, fold constants.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 3))
>>> infer_shape(relay.transpose(x))
(3, 2)
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.expr import Expr, Function, Var
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType
from relaykit.transform import FoldConstant, InferType

__all__ = ["infer_type", "infer_shape", "infer_channels", "fold_constant", "new_var"]


def infer_type(node: Expr, mod: IRModule | None = None) -> Expr:
    """``node`` with its type inferred (read it from ``.checked_type``), in ``mod`` when
    given (so it may call the module's globals)."""
    new_mod = IRModule.from_expr(node) if mod is None else mod
    if mod is not None:
        new_mod["main"] = node if isinstance(node, Function) else Function([], node)
    new_mod = InferType()(new_mod)
    entry = new_mod["main"]
    return entry if isinstance(node, Function) else entry.body


def infer_shape(inputs: Expr, mod: IRModule | None = None) -> tuple[Any, ...]:
    """The static shape of a tensor expression."""
    ty: Any = infer_type(inputs, mod).checked_type
    return tuple(ty.shape)


def infer_channels(inputs: Expr, transpose: bool = False) -> Any:
    """The channel count of a weight (its first dimension, its second with ``transpose``)."""
    shape = infer_shape(inputs)
    return shape[1] if transpose else shape[0]


def fold_constant(node: Expr, mod: IRModule | None = None) -> Expr:
    """``node`` with its constant sub-expressions evaluated."""
    new_mod = IRModule.from_expr(node) if mod is None else mod
    if mod is not None:
        new_mod["main"] = node if isinstance(node, Function) else Function([], node)
    entry = FoldConstant()(new_mod)["main"]
    return entry if isinstance(node, Function) else entry.body


def new_var(
    name_hint: str, type_annotation: Any = None, shape: Any = None, dtype: str = "float32"
) -> Expr:
    """A fresh variable, as ``relay.var``."""
    if shape is not None:
        type_annotation = TensorType(shape, dtype)
    return Var(name_hint, type_annotation)
