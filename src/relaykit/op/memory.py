"""``memory.*`` operators of the VM's memory planning: ``memory.kill(x)`` marks the point
after which the value of ``x`` is no longer used, so its storage may be released
(``relay.transform.ManifestLifetimes`` inserts them). It computes nothing and returns
the empty tuple.

>>> from relaykit import relay
>>> kill(relay.var("x", shape=(2,))).op.name
'memory.kill'
"""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.op import register_op_attr
from relaykit.ir.types import TupleType, Type

from .define import OpPattern, define_op, make_call

__all__ = ["kill"]


def _kill_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    return TupleType([])


define_op(
    "memory.kill",
    num_inputs=1,
    type_rel=_kill_rel,
    compute=lambda args, attrs: (),
    pattern=OpPattern.OPAQUE,
    doc="Mark a variable's value as no longer used (its storage may be released).",
)
register_op_attr("memory.kill", "TOpIsStateful", True)
register_op_attr("memory.kill", "TNonComputational", True)


def kill(to_free: Expr) -> Call:
    """``memory.kill(to_free)``: ``to_free`` is dead from here on."""
    return make_call("memory.kill", [to_free])
