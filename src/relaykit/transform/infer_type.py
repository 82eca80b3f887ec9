"""Type inference as a pass: ``InferType()`` runs the IR's own type checker
(:mod:`relaykit.ir.type_check`) over a module; ``InferTypeLocal(expr)`` types a
new expression incrementally, re-using the types already on its sub-expressions.

>>> from relaykit.ir import Var, TensorType
>>> from relaykit.op import add
>>> x = Var("x", TensorType((2, 3)))
>>> str(infer_type(add(x, x)))
'Tensor[(2, 3), float32]'
>>> y = add(x, x)
>>> str(InferTypeLocal(add(y, y))), str(y.checked_type)
('Tensor[(2, 3), float32]', 'Tensor[(2, 3), float32]')
"""

from __future__ import annotations

from relaykit.ir.expr import Expr
from relaykit.ir.module import IRModule
from relaykit.ir.type_check import infer_function, infer_module, infer_type, infer_type_local
from relaykit.ir.types import Type

from .pass_infra import ModulePass, PassContext

__all__ = [
    "InferType",
    "InferTypeLocal",
    "infer_type",
    "infer_type_local",
    "infer_module",
    "infer_function",
]


def InferTypeLocal(expr: Expr) -> Type:  # TVM's name
    """The type of ``expr``, typing only its nodes that have none yet (TVM's
    ``relay.transform.InferTypeLocal``). Passes use it for the nodes they build."""
    return infer_type_local(expr)


class InferType(ModulePass):
    """``relay.transform.InferType()``: fill ``checked_type`` everywhere in a module."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="InferType")

    @staticmethod
    def _transform(mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod.copy()
        infer_module(out)
        return out
