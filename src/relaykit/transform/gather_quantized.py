"""``GatherBeforeDequantize``: ``take(qnn.dequantize(table, s, z), indices)`` becomes
``qnn.dequantize(take(table, indices), s, z)`` when the scale and zero point are per
tensor.

A quantized model's embedding table stays int8 after ``FakeQuantizationToInteger``
(``take`` has no integer rule of its own there), so the whole table was dequantized on
every run to gather a few rows of it (BERT-base: 23M elements per run for 128 tokens).
Dequantizing per tensor is elementwise, so gathering first gives the same floats.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> t = relay.var("t", shape=(10, 4), dtype="int8")
>>> i = relay.var("i", shape=(3,), dtype="int32")
>>> d = relay.qnn.op.dequantize(t, relay.const(0.5), relay.const(1))
>>> fn = relay.Function([t, i], relay.take(d, i, axis=0))
>>> GatherBeforeDequantize()(IRModule.from_expr(fn))["main"].body.op.name
'qnn.dequantize'
"""

from __future__ import annotations

from relaykit.ir.expr import Call, Constant, Expr, Function
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.op import take
from relaykit.op.define import make_call

from .fold_constant import rewrite_outside_opaque
from .pass_infra import FunctionPass, PassContext

__all__ = ["GatherBeforeDequantize", "gather_before_dequantize"]


def _name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _scalar(e: Expr) -> bool:
    return isinstance(e, Constant) and e.data.numpy().size == 1


def gather_before_dequantize(expr: Expr) -> Expr:
    """``expr`` with the module docs' rewrite applied."""

    def post(new: Expr, old: Expr) -> Expr | None:
        if _name(new) != "take":
            return None
        deq = new.args[0]  # type: ignore[attr-defined]
        if _name(deq) != "qnn.dequantize" or not all(_scalar(a) for a in deq.args[1:]):
            return None
        attrs = new.attrs  # type: ignore[attr-defined]
        gathered = take(
            deq.args[0], new.args[1], axis=attrs.axis, batch_dims=attrs.batch_dims,  # type: ignore[attr-defined]
            mode=attrs.mode,
        )  # fmt: skip
        return make_call("qnn.dequantize", [gathered, *deq.args[1:]], **dict(deq.attrs))

    return rewrite_outside_opaque(expr, post)


class GatherBeforeDequantize(FunctionPass):
    """See the module docs (opt_level 1)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=1, name="GatherBeforeDequantize")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = gather_before_dequantize(fn)
        return out if isinstance(out, Function) else fn
