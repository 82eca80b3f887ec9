"""``DefuseOps``: undo ``FuseOps`` — each call of a function literal (a fused
``Primitive`` one or any other, as in TVM) is replaced by the function's body with its
parameters bound to the call's arguments. Functions for a backend (``Compiler``) or
composite patterns (``Composite``) stay whole.

One post-order rewrite; ``DefuseOps(FuseOps(f))`` is ``f`` again (structurally).

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2,))
>>> mod = IRModule.from_expr(relay.Function([x], relay.exp(relay.exp(x))))
>>> fused = relay.transform.FuseOps(fuse_opt_level=2)(mod)
>>> out = DefuseOps()(fused)["main"].body
>>> out.op.name, out.args[0].op.name
('exp', 'exp')
"""

from __future__ import annotations

from relaykit.ir.expr import Call, Expr, Function
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule

from .bind import bind
from .pass_infra import FunctionPass, PassContext

__all__ = ["DefuseOps", "defuse_ops"]


def defuse_ops(expr: Expr) -> Expr:
    """``expr`` with every call of a function literal inlined (see the module docs)."""

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is Call and type(new.op) is Function:
            fn = new.op
            if fn.attrs.get("Compiler") or fn.attrs.get("Composite"):
                return None
            return bind(fn.body, dict(zip(fn.params, new.args, strict=True)))
        return None

    return rewrite_post_order(expr, post)


class DefuseOps(FunctionPass):
    """``relay.transform.DefuseOps()`` (opt_level 3)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=3, name="DefuseOps")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = defuse_ops(fn)
        return out if isinstance(out, Function) else fn
