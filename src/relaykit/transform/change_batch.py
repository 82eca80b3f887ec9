"""``ChangeBatch``: the batch size of chosen inputs of ``main`` changed, and every type
re-inferred from them (TVM's ``relay.transform.ChangeBatch``).

``data`` maps parameters of ``main`` (the ``Var`` objects) to the axis that is their batch
axis; each gets ``batch_size`` there. Other functions of the module are kept.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(1, 4))
>>> mod = IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
>>> str(ChangeBatch({mod["main"].params[0]: 0}, batch_size=8)(mod)["main"].ret_type)
'Tensor[(8, 4), float32]'
"""

from __future__ import annotations

from collections.abc import Mapping

from relaykit.errors import ArgumentError
from relaykit.ir.expr import Function, Var
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType

from .bind import bind
from .infer_type import InferType
from .pass_infra import ModulePass, PassContext

__all__ = ["ChangeBatch", "change_batch"]


def change_batch(mod: IRModule, data: Mapping[Var, int], batch_size: int = 16) -> IRModule:
    """``mod`` with each parameter of ``data`` given ``batch_size`` at its axis."""
    main = mod["main"]
    unknown = [v for v in data if v not in main.params]
    if unknown:
        names = ", ".join(f"%{getattr(v, 'name_hint', v)}" for v in unknown)
        raise ArgumentError(f"ChangeBatch: {names} are not parameters of main")
    params = []
    for p in main.params:
        ty = p.type_annotation
        if p in data:
            if not isinstance(ty, TensorType):
                raise ArgumentError(f"ChangeBatch: %{p.name_hint} is not a tensor ({ty})")
            shape = list(ty.shape)
            axis = int(data[p])
            if not -len(shape) <= axis < len(shape):
                raise ArgumentError(f"ChangeBatch: axis {axis} is out of range for {ty}")
            shape[axis] = int(batch_size)
            params.append(
                Var(
                    p.name_hint,
                    TensorType(tuple(shape), ty.dtype),
                    virtual_device=p.virtual_device_,
                )
            )
        else:
            params.append(p)
    body = bind(main.body, dict(zip(main.params, params, strict=True)))
    out = mod.copy()
    out["main"] = Function(params, body, None, main.type_params, main.attrs)
    return InferType()(out)


class ChangeBatch(ModulePass):
    """``relay.transform.ChangeBatch(data, batch_size=16)`` (opt_level 1)."""

    def __init__(self, data: Mapping[Var, int], batch_size: int = 16) -> None:
        chosen = dict(data)

        def run(mod: IRModule, ctx: PassContext) -> IRModule:
            return change_batch(mod, chosen, batch_size)

        super().__init__(run, opt_level=1, name="ChangeBatch")
