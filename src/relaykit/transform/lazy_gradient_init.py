"""``LazyGradientInit``: gradient seeds and accumulators made of zeros and ones are not
materialised when arithmetic can absorb them.

Reverse-mode differentiation starts from ``ones_like(out)`` and accumulates into
``zeros_like(x)``; most of those tensors only meet ``add`` and ``multiply``. This pass
tracks values known to be all zeros or all ones (calls of ``zeros``, ``ones``,
``zeros_like``, ``ones_like``) and rewrites, bottom-up:

* ``x + 0``, ``0 + x``, ``x - 0``, ``x * 1``, ``1 * x`` -> ``x`` (broadcast to the result's
  shape when the other operand was larger); ``0 - x`` -> ``-x``;
* ``x * 0``, ``0 * x``, ``-0`` -> a zero of the result's type; ``collapse_sum_like(0, y)``
  and ``broadcast_to_like(0, y)`` -> a zero like ``y``;
* ``zeros_like(x)`` / ``ones_like(x)`` of a static type -> ``zeros`` / ``ones`` of that
  type, so the value of ``x`` is no longer needed.

A zero or one that still reaches another operator is computed there, as before. As in
TVM's pass, ``x * 0`` is taken to be 0 (a NaN or infinite ``x`` would give NaN). Types of
the function are unchanged. TVM implements the pass with a ``GradCell`` data type; the
rewrites are the same.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(3,))
>>> f = relay.Function([x], relay.add(relay.multiply(x, relay.ones_like(x)), relay.zeros_like(x)))
>>> LazyGradientInit()(IRModule.from_expr(f))["main"].body is x
True
"""

from __future__ import annotations

from relaykit import op
from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType

from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["LazyGradientInit", "lazy_gradient_init"]

_ZEROS = ("zeros", "zeros_like")
_ONES = ("ones", "ones_like")


def _op_name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _static(t: object) -> TensorType | None:
    return t if isinstance(t, TensorType) and t.is_static else None


def _zero(t: TensorType) -> Call:
    return op.zeros(tuple(int(d) for d in t.shape), t.dtype)


def _fit(value: Expr, value_type: object, out: TensorType) -> Expr | None:
    """``value`` as the result of type ``out``: itself, or broadcast to ``out``'s shape."""
    if value_type == out:
        return value
    if isinstance(value_type, TensorType) and value_type.dtype == out.dtype:
        return op.broadcast_to(value, tuple(int(d) for d in out.shape))
    return None


def _arith(name: str, new: Call, old: Call, out: TensorType) -> Expr | None:
    """``add``, ``subtract`` and ``multiply`` with a zero or one operand, absorbed."""
    (a, b), (ka, kb) = new.args, [_op_name(e) for e in new.args]
    ta, tb = (checked_type_or_none(e) for e in old.args)
    if name == "multiply":
        if ka in _ZEROS or kb in _ZEROS:
            return _zero(out)
        if kb in _ONES or ka in _ONES:
            return _fit(a, ta, out) if kb in _ONES else _fit(b, tb, out)
        return None
    if kb in _ZEROS:
        return _fit(a, ta, out)
    if ka in _ZEROS:
        return _fit(b if name == "add" else op.negative(b), tb, out)
    return None


def _rewrite(new: Expr, old: Expr) -> Expr | None:
    name = _op_name(new)
    out = _static(checked_type_or_none(old)) if name else None
    if out is None:
        return None
    assert isinstance(new, Call) and isinstance(old, Call)
    if name in ("zeros_like", "ones_like"):
        return _zero(out) if name == "zeros_like" else op.ones(tuple(out.shape), out.dtype)
    if name in ("collapse_sum_like", "broadcast_to_like", "negative"):
        return _zero(out) if _op_name(new.args[0]) in _ZEROS else None
    if name in ("add", "subtract", "multiply"):
        return _arith(name, new, old, out)
    return None


def lazy_gradient_init(fn: Function, mod: IRModule | None = None) -> Function:
    """``fn`` with the zeros and ones that arithmetic absorbs left out (``fn`` is typed
    first when it is not)."""
    if checked_type_or_none(fn) is None:
        infer_type(fn, mod)
    out = rewrite_post_order(fn, _rewrite)
    return out if isinstance(out, Function) else fn


class LazyGradientInit(FunctionPass):
    """``relay.transform.LazyGradientInit()`` (opt_level 2)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=2, name="LazyGradientInit")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        return lazy_gradient_init(fn, mod)
