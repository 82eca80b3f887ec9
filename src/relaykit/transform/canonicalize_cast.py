"""``CanonicalizeCast``: give each elementwise consumer of a widening ``cast`` a copy of
its own.

When an up-cast (``int8 -> int32``) feeds several elementwise or broadcast operators,
fusion would keep the wide value between groups; with one copy of the cast per
consumer, each copy fuses into its consumer and only the narrow value crosses
(TVM's pass of that name). The first consumer keeps the original cast.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(4,), dtype="int8")
>>> c = relay.cast(x, "int32")
>>> f = relay.Function([x], relay.add(c + relay.const(1), c + relay.const(2)))
>>> out = CanonicalizeCast()(IRModule.from_expr(f))["main"].body
>>> out.args[0].args[0] is out.args[1].args[0]
False
"""

from __future__ import annotations

import re

from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op, default_registry
from relaykit.ir.types import TensorType
from relaykit.op.define import OpPattern

from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["CanonicalizeCast", "canonicalize_cast"]


def _bits(dtype: str) -> int:
    if dtype == "bool":
        return 1
    m = re.search(r"(\d+)$", dtype)
    return int(m.group(1)) if m else 0


def _is_upcast(expr: Expr) -> bool:
    if type(expr) is not Call or type(expr.op) is not Op or expr.op.name != "cast":
        return False
    src = checked_type_or_none(expr.args[0])
    return isinstance(src, TensorType) and _bits(src.dtype) < _bits(str(expr.attrs.dtype))


def _fusable_elementwise(call: Call) -> bool:
    if type(call.op) is not Op:
        return False
    pattern = default_registry.get_attr(call.op.name, "TOpPattern")
    return pattern is not None and int(pattern) <= int(OpPattern.BROADCAST)


def canonicalize_cast(expr: Expr) -> Expr:
    """``expr`` with widening casts copied per elementwise consumer (module docs)."""
    infer_type(expr)
    uses: dict[Expr, int] = {}

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(old) is not Call or not _fusable_elementwise(old):
            return None
        args = list(new.args)  # type: ignore[attr-defined]
        changed = False
        for i, arg in enumerate(old.args):
            if not _is_upcast(arg):
                continue
            uses[arg] = uses.get(arg, 0) + 1
            if uses[arg] > 1:
                cast = args[i]
                args[i] = Call(cast.op, cast.args, cast.attrs)
                changed = True
        return Call(new.op, args, new.attrs, new.type_args, new.span) if changed else None  # type: ignore[attr-defined]

    return rewrite_post_order(expr, post)


class CanonicalizeCast(FunctionPass):
    """``relay.transform.CanonicalizeCast()`` (opt_level 3): see the module docs."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=3, name="CanonicalizeCast")

    def _transform(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = canonicalize_cast(fn)
        return out if isinstance(out, Function) else fn
