"""``FuseGelu``: the erf GELU chain exporters write, as one ``nn.gelu``.

PyTorch's ``nn.GELU()`` exports as ``0.5 * x * (1 + erf(x / sqrt 2))``: five operators,
five passes over the FFN's widest tensor. This pass finds the chain in any association
of its products (``(x * cdf) * 0.5``, ``(x * 0.5) * cdf``, ``x * (cdf * 0.5)``, either
operand order) with ``cdf = erf(x / sqrt 2) + 1`` (or ``x * (1 / sqrt 2)``, ``1 + erf``)
and writes ``nn.gelu(x)``, which the host runs in one pass. Float32 and float64 only;
the constants must be scalars 0.5, 1 and sqrt 2 (or its inverse) to float32 rounding. Functions
for backends and composite functions are left as they are.

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

import math

from relaykit.ir.expr import Call, Constant, Expr, Function, checked_type_or_none
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType
from relaykit.op.nn import gelu

from .fold_constant import rewrite_outside_opaque
from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["FuseGelu", "fuse_gelu", "match_gelu"]

_DTYPES = frozenset({"float32", "float64"})
_SQRT2 = math.sqrt(2.0)


def _name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _is(e: Expr, value: float) -> bool:
    """Whether ``e`` is a scalar (0-d: it broadcasts nothing) constant equal to ``value``
    to float32 rounding."""
    if type(e) is not Constant:
        return False
    data = e.data.numpy()
    return data.ndim == 0 and abs(float(data) - value) <= 2e-7 * abs(value)


def _pair(e: Expr, name: str) -> list[tuple[Expr, Expr]]:
    """``(a, b)`` and ``(b, a)`` of ``e = name(a, b)``, else nothing."""
    if _name(e) != name:
        return []
    a, b = e.args  # type: ignore[attr-defined]
    return [(a, b), (b, a)]


def _cdf_input(cdf: Expr) -> Expr | None:
    """``x`` of ``cdf = erf(x / sqrt 2) + 1`` (or ``x * (1 / sqrt 2)``, ``1 + erf``)."""
    for e, one in _pair(cdf, "add"):
        if _name(e) != "erf" or not _is(one, 1.0):
            continue
        inner = e.args[0]  # type: ignore[attr-defined]
        if _name(inner) == "divide" and _is(inner.args[1], _SQRT2):
            return inner.args[0]
        for x, c in _pair(inner, "multiply"):
            if _is(c, 1.0 / _SQRT2):
                return x
    return None


def _triples(root: Expr) -> list[tuple[Expr, Expr, Expr]]:
    """The three factors of ``root``, a product of a product and a factor, in every order
    that can be ``(x, cdf, half)``."""
    out = []
    for left, right in _pair(root, "multiply"):
        for a, b in _pair(left, "multiply"):
            out += [(a, b, right), (a, right, b), (b, a, right), (b, right, a)]
            out += [(right, a, b), (right, b, a)]
    return out


def match_gelu(root: Expr) -> Expr | None:
    """``x`` when ``root`` computes ``0.5 x (1 + erf(x / sqrt 2))``, else None."""
    for x, cdf, half in _triples(root):
        if _is(half, 0.5) and _cdf_input(cdf) is x:
            return x
    return None


def fuse_gelu(expr: Expr) -> Expr:
    """``expr`` with every matched chain replaced by ``nn.gelu`` (types are inferred, if
    missing)."""
    if not expr.has_checked_type:
        infer_type(expr)

    def post(new: Expr, old: Expr) -> Expr | None:
        if _name(new) != "multiply":
            return None
        ty = checked_type_or_none(old)
        if not isinstance(ty, TensorType) or ty.dtype not in _DTYPES:
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
