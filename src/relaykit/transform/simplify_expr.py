"""``SimplifyExpr``: local algebraic simplifications, as TVM's pass of that name.

Each rule rewrites one call (post order, so chains collapse in one walk) and only
where the result has the same type as the call:

- ``reshape(reshape(x))`` (and ``reshape`` / ``contrib_reverse_reshape`` / ``squeeze`` /
  ``expand_dims`` / ``nn.batch_flatten`` chains ending in a reshape) becomes one ``reshape`` of
  ``x``; a reshape, squeeze, expand_dims or transpose that keeps ``x``'s type and
  element order disappears;
- ``transpose(transpose(x, p), q)`` becomes one ``transpose`` (or ``x`` itself);
- ``cast(x, t)`` of an ``x`` already of dtype ``t`` disappears, and a cast of a cast
  that keeps every value (``int8 -> int32 -> float32``) becomes one cast;
- ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1`` with a scalar constant 0 or 1 become ``x``
  (as TVM's, a tensor of zeros is kept: it may be a bias a pattern expects);
- ``(x + c1) + c2`` with constants ``c1``, ``c2`` becomes ``x + (c1 + c2)``, which
  ``FoldConstant`` then evaluates (a convolution's bias followed by a batch norm's
  shift is one addition), and likewise ``(x * c1) * c2``.

Functions handed to a backend and composite functions are left as they are.

>>> import numpy as np
>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2, 6))
>>> y = relay.reshape(relay.reshape(x, (3, 4)), (12,)) * relay.const(1.0)
>>> body = SimplifyExpr()(IRModule.from_expr(relay.Function([x], y)))["main"].body
>>> body.op.name, body.args[0] is x, body.attrs.newshape
('reshape', True, (12,))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.ir.expr import Call, Constant, Expr, Function, checked_type_or_none
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.structural import structural_equal
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType
from relaykit.op import add, cast, multiply, reshape, transpose

from .fold_constant import rewrite_outside_opaque
from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["SimplifyExpr", "simplify_expr"]

_SHAPE_OPS = frozenset(
    {"reshape", "contrib_reverse_reshape", "squeeze", "expand_dims", "nn.batch_flatten"}
)
_RESHAPES = frozenset({"reshape", "contrib_reverse_reshape"})


def _name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _static_tensor(e: Expr) -> TensorType | None:
    t = checked_type_or_none(e)
    if not isinstance(t, TensorType) or not all(isinstance(d, int) for d in t.shape):
        return None
    return t


def _type_of(e: Expr) -> Any:
    return checked_type_or_none(e) if e.has_checked_type else infer_type_local(e)


def _same_type(a: Expr, b: Expr) -> bool:
    ta, tb = _type_of(a), _type_of(b)
    return ta is not None and tb is not None and structural_equal(ta, tb)


def _simplify_shape_chain(new: Call, old: Call) -> Expr | None:
    """A reshape of a shape-op chain is one reshape of the chain's input; a no-op
    reshape, squeeze or expand_dims is its input."""
    name = _name(new)
    src = new.args[0]
    if name in _SHAPE_OPS and _same_type(src, new):
        return src
    if name not in _RESHAPES:
        return None
    out = _static_tensor(old)
    if out is None:
        return None
    inner = src
    while _name(inner) in _SHAPE_OPS:
        inner = inner.args[0]  # type: ignore[attr-defined]
    if inner is src:
        return None
    return reshape(inner, [int(d) for d in out.shape])


def _simplify_transpose(new: Call) -> Expr | None:
    src = new.args[0]
    if _name(src) != "transpose":
        return None
    t_in = _static_tensor(src.args[0])  # type: ignore[attr-defined]
    if t_in is None:
        return None
    n = len(t_in.shape)

    def perm(call: Any) -> list[int]:
        axes = call.attrs.axes
        if not axes:
            return list(reversed(range(n)))
        return [int(a) % n for a in axes]

    inner, outer = perm(src), perm(new)
    combined = [inner[p] for p in outer]
    base = src.args[0]  # type: ignore[attr-defined]
    return base if combined == list(range(n)) else transpose(base, combined)


def _const_value(e: Expr) -> np.ndarray | None:
    return e.data.numpy() if type(e) is Constant else None


def _identity_operand(new: Call) -> Expr | None:
    """``x`` for ``x + 0``, ``0 + x``, ``x - 0``, ``x * 1``, ``1 * x``, ``x / 1``."""
    name = _name(new)
    unit = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "divide": 1.0}.get(name)
    if unit is None:
        return None
    lhs, rhs = new.args
    sides = [(lhs, rhs)]
    if name in ("add", "multiply"):
        sides.append((rhs, lhs))
    for x, c in sides:
        v = _const_value(c)
        if v is not None and v.ndim == 0 and v == unit and _same_type(x, new):
            return x
    return None


def _fold_consecutive(new: Call) -> Expr | None:
    """``(x op c1) op c2`` with constants as ``x op (c1 op c2)``, for add and multiply."""
    name = _name(new)
    if name not in ("add", "multiply"):
        return None
    inner, c2 = new.args
    if type(c2) is not Constant and type(inner) is Constant:
        inner, c2 = c2, inner
    if type(c2) is not Constant or _name(inner) != name:
        return None
    x, c1 = inner.args  # type: ignore[attr-defined]
    if type(c1) is not Constant and type(x) is Constant:
        x, c1 = c1, x
    if type(c1) is not Constant or type(x) is Constant:
        return None
    build = add if name == "add" else multiply
    out = build(x, build(c1, c2))
    return out if _same_type(out, new) else None


def _lossless(src: str, dst: str) -> bool:
    """Whether every value of dtype ``src`` survives a cast to ``dst``."""
    try:
        return bool(np.can_cast(np.dtype(src), np.dtype(dst), casting="safe"))
    except TypeError:  # a dtype NumPy does not know: assume it may lose values
        return False


def _simplify_cast(new: Call) -> Expr | None:
    """``cast(x, t)`` of an ``x`` of dtype ``t`` is ``x``; ``cast(cast(x, a), b)`` whose
    inner cast keeps every value of ``x`` is ``cast(x, b)``."""
    src = new.args[0]
    if _same_type(src, new):
        return src
    if _name(src) != "cast":
        return None
    x = src.args[0]  # type: ignore[attr-defined]
    tx = _type_of(x)
    if not isinstance(tx, TensorType) or not _lossless(tx.dtype, src.attrs.dtype):  # type: ignore[attr-defined]
        return None
    return x if tx.dtype == new.attrs.dtype else cast(x, new.attrs.dtype)


def simplify_expr(expr: Expr) -> Expr:
    """``expr`` with the module docs' simplifications applied (types are inferred)."""
    if not expr.has_checked_type:
        infer_type(expr)

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is not Call or type(new.op) is not Op:
            return None
        name = new.op.name
        if name == "cast":
            return _simplify_cast(new)
        if name == "transpose":
            if _same_type(new.args[0], new) and _static_tensor(new.args[0]) is not None:
                t = _static_tensor(new.args[0])
                n = len(t.shape) if t else 0
                axes = new.attrs.axes
                if axes and [int(a) % n for a in axes] == list(range(n)):
                    return new.args[0]
            return _simplify_transpose(new)
        if name in _SHAPE_OPS:
            return _simplify_shape_chain(new, old)  # type: ignore[arg-type]
        return _identity_operand(new) or _fold_consecutive(new)

    return rewrite_outside_opaque(expr, post)


class SimplifyExpr(FunctionPass):
    """``relay.transform.SimplifyExpr()`` (opt_level 0): see the module docs."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="SimplifyExpr")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = simplify_expr(fn)
        return out if isinstance(out, Function) else fn
