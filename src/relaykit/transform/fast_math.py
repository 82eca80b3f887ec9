"""``FastMath``: ``exp``, ``tanh``, ``erf`` and ``nn.softmax`` become their fast forms
(``fast_exp``, ``fast_tanh``, ``fast_erf``, ``nn.fast_softmax``).

TVM's fast forms are polynomial approximations (relative error about 1e-5) that its code
generator vectorises; relaykit's kernels compute them exactly, so the rewrite marks where
a backend may approximate. The pass has opt_level 4: ``relay.build`` runs it when the
``PassContext`` has ``opt_level=4`` or ``required_pass=["FastMath"]``.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(4,))
>>> FastMath()(IRModule.from_expr(relay.tanh(relay.exp(x))))["main"].body.op.name
'fast_tanh'
"""

from __future__ import annotations

from relaykit.ir.expr import Call, Expr, Function
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op, get_op

from .pass_infra import FunctionPass, PassContext

__all__ = ["FastMath", "fast_math", "FAST_FORMS"]

#: Each operator and its fast form.
FAST_FORMS = {
    "exp": "fast_exp",
    "tanh": "fast_tanh",
    "erf": "fast_erf",
    "nn.softmax": "nn.fast_softmax",
}


def fast_math(expr: Expr) -> Expr:
    """``expr`` with each operator of :data:`FAST_FORMS` replaced by its fast form."""

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is Call and type(new.op) is Op and new.op.name in FAST_FORMS:
            fast = get_op(FAST_FORMS[new.op.name])
            return Call(fast, list(new.args), new.attrs, span=new.span)
        return None

    return rewrite_post_order(expr, post)


class FastMath(FunctionPass):
    """``relay.transform.FastMath()`` (opt_level 4)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=4, name="FastMath")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = fast_math(fn)
        return out if isinstance(out, Function) else fn
