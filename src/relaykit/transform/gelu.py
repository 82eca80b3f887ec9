"""``FuseGelu``: the erf GELU chain exporters write, as one ``nn.gelu``.

PyTorch's ``nn.GELU()`` exports as ``0.5 * x * (1 + erf(x / sqrt 2))``: five operators,
five passes over the FFN's widest tensor. This pass finds the chain in any association
of its products (``(x * cdf) * 0.5``, ``(x * 0.5) * cdf``, ``x * (cdf * 0.5)``, either
operand order) with ``cdf = erf(x / sqrt 2) + 1`` (or ``x * (1 / sqrt 2)``, ``1 + erf``)
and writes ``nn.gelu(x)``, which the host runs in one pass. Float32 and float64 only;
the constants must be scalars 0.5, 1 and sqrt 2 (or its inverse) to float32 rounding. Functions
for backends and composite functions are left as they are. The recogniser is the shared
one of :mod:`.idioms` (the frontends emit ``nn.gelu`` themselves; this pass is for
modules built by hand).

>>> import math
>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2, 8))
>>> cdf = relay.erf(x / relay.const(math.sqrt(2.0))) + relay.const(1.0)
>>> y = x * cdf * relay.const(0.5)
>>> body = FuseGelu()(IRModule.from_expr(relay.Function([x], y)))["main"].body
>>> body.op.name, body.args[0] is x
('nn.gelu', True)
"""

from __future__ import annotations

from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType
from relaykit.op.nn import gelu

from .fold_constant import rewrite_outside_opaque
from .idioms import FLOAT_DTYPES, match_gelu
from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["FuseGelu", "fuse_gelu", "match_gelu"]


def fuse_gelu(expr: Expr) -> Expr:
    """``expr`` with every matched chain (:func:`.idioms.match_gelu`) replaced by
    ``nn.gelu`` (types are inferred, if missing)."""
    if not expr.has_checked_type:
        infer_type(expr)

    def post(new: Expr, old: Expr) -> Expr | None:
        if not (type(new) is Call and type(new.op) is Op and new.op.name == "multiply"):
            return None
        ty = checked_type_or_none(old)
        if not isinstance(ty, TensorType) or ty.dtype not in FLOAT_DTYPES:
            return None
        x = match_gelu(new)
        return None if x is None else gelu(x)

    return rewrite_outside_opaque(expr, post)


class FuseGelu(FunctionPass):
    """Rewrite erf GELU chains into ``nn.gelu`` (opt_level 1): see the module docs."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=1, name="FuseGelu")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = fuse_gelu(fn)
        return out if isinstance(out, Function) else fn
