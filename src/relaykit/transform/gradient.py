"""``relay.transform.gradient``: reverse-mode automatic differentiation of a function.

``gradient(fn)`` returns a function of the same parameters whose result is
``(fn(...), (d out / d p for each parameter p))``, where the gradient is that of
the sum of the output's elements (its adjoint is ``ones_like(out)``). For a tuple
output, TVM's two modes differ and relaykit follows each: ``first_order`` sums every
field, ``higher_order`` (the default) only the first field (recursively). Each
operator's gradient comes from its ``FPrimalGradient`` attribute (see
:mod:`relaykit.op.tensor_grad`; add more with ``register_gradient``).

The gradient is computed first-order, over dataflow graphs (calls of operators,
tuples, projections, constants): every forward value is computed once and shared
by the backward expressions. TVM's ``mode="higher_order"`` (which also
differentiates through closures and control flow) gives the same result on such
graphs (but for the seeding of tuple outputs, above); ``let`` bindings of values
are read as those values, shared by their uses; functions with ``if``, closures or
calls of other functions raise :class:`~relaykit.errors.UnsupportedFeatureError`.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(3,))
>>> g = gradient(relay.Function([x], relay.multiply(x, x)))
>>> import numpy as np
>>> from relaykit.ir import IRModule
>>> out, (dx,) = relay.create_executor("debug", mod=IRModule.from_expr(g)).evaluate()(
...     np.array([1.0, 2.0, 3.0], "float32"))
>>> dx.numpy().tolist()
[2.0, 4.0, 6.0]
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import ArgumentError, UnsupportedFeatureError
from relaykit.ir.expr import Call, Constant, Expr, Function, Let, Tuple, TupleGetItem, Var
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TupleType
from relaykit.op import nn_grad, tensor_grad, transform_grad  # register the operators' gradients
from relaykit.op.tensor import add, ones_like, zeros_like

from ._let_inline import remove_lets
from .infer_type import infer_type

__all__ = ["gradient", "GRADIENT_MODES"]

GRADIENT_MODES = ("higher_order", "first_order")
_ = nn_grad, tensor_grad, transform_grad


def _fields_of(g: Expr, n: int) -> list[Expr]:
    return list(g.fields) if type(g) is Tuple else [TupleGetItem(g, i) for i in range(n)]


class _Adjoints:
    """The gradient accumulated for each node: an Expr for a tensor, a list of
    per-field gradients (None when still zero) for a tuple."""

    def __init__(self) -> None:
        self.adj: dict[Expr, Any] = {}

    def add(self, node: Expr, g: Any) -> None:
        ty = node.checked_type
        if isinstance(ty, TupleType):
            n = len(ty.fields)
            parts = g if isinstance(g, list) else _fields_of(g, n)
            cur = self.adj.setdefault(node, [None] * n)
            for i, p in enumerate(parts):
                if p is not None:
                    cur[i] = p if cur[i] is None else add(cur[i], p)
            return
        old = self.adj.get(node)
        self.adj[node] = g if old is None else add(old, g)

    def add_field(self, node: Expr, index: int, g: Expr) -> None:
        n = len(node.checked_type.fields)  # type: ignore[attr-defined]
        parts: list[Expr | None] = [None] * n
        parts[index] = g
        self.add(node, parts)

    def as_expr(self, node: Expr) -> Expr:
        """The gradient of ``node`` (zeros when nothing flowed into it)."""
        g = self.adj.get(node)
        ty = node.checked_type
        if isinstance(ty, TupleType):
            parts = g or [None] * len(ty.fields)
            return Tuple(
                [
                    p if p is not None else _zeros_of(TupleGetItem(node, i), ty.fields[i])
                    for i, p in enumerate(parts)
                ]
            )
        return g if g is not None else zeros_like(node)


def _zeros_of(e: Expr, ty: Any) -> Expr:
    if isinstance(ty, TupleType):
        return Tuple([_zeros_of(TupleGetItem(e, i), f) for i, f in enumerate(ty.fields)])
    return zeros_like(e)


def _seed(e: Expr, ty: Any, first_only: bool) -> Any:
    """The output's adjoint: ones for every tensor (``first_order``), or, as TVM's
    higher-order mode seeds a tuple, ones for its first field (recursively) only."""
    if isinstance(ty, TupleType):
        return [
            _seed(TupleGetItem(e, i), f, first_only) if i == 0 or not first_only else None
            for i, f in enumerate(ty.fields)
        ]
    return ones_like(e)


def _check_node(node: Expr) -> None:
    t = type(node)
    if t in (Var, Constant, Tuple, TupleGetItem, Op):
        return
    if isinstance(node, Call) and type(node.op) is Op:
        return
    what = "a call of a function value" if t is Call else f"a {t.__name__}"
    raise UnsupportedFeatureError(
        f"gradient: the function contains {what}; relaykit differentiates dataflow graphs "
        "of operator calls, tuples and constants (inline functions and remove lets with "
        "relay.transform.ToGraphNormalForm first)"
    )


def gradient(expr: Expr, mod: IRModule | None = None, mode: str = "higher_order") -> Function:
    """The function returning ``(expr(...), gradients of each parameter)`` (TVM's
    ``relay.transform.gradient(expr, mod, mode)``)."""
    if not isinstance(expr, Function):
        raise ArgumentError(f"gradient needs a relay Function, got {type(expr).__name__}")
    if mode not in GRADIENT_MODES:
        raise ArgumentError(f"gradient mode must be one of {GRADIENT_MODES}, got {mode!r}")
    if any(type(n) is Let for n in post_order(expr.body)):
        # a let of a pure value is the value itself, shared by its uses (computed once)
        body = remove_lets(expr.body, lambda let: not isinstance(let.value, Function))
        expr = Function(list(expr.params), body, expr.ret_type, expr.type_params, expr.attrs)
    infer_type(expr, mod)
    body = expr.body
    order = list(post_order(body))
    for node in order:
        _check_node(node)
    adj = _Adjoints()
    adj.add(body, _seed(body, body.checked_type, mode == "higher_order"))
    for node in reversed(order):
        g = adj.adj.get(node)
        if g is None:
            continue
        if isinstance(node, Call):
            op = node.op
            assert isinstance(op, Op)
            grad_fn = op.get_attr("FPrimalGradient")
            if grad_fn is None:
                raise UnsupportedFeatureError(
                    f"gradient: operator {op.name} has no gradient; register one with "
                    f"relaykit.op.register_gradient({op.name!r}, fn)"
                )
            out_grad = adj.as_expr(node)
            for arg, ag in zip(node.args, grad_fn(node, out_grad), strict=False):
                adj.add(arg, ag)
        elif type(node) is Tuple:
            for field, fg in zip(node.fields, g, strict=True):
                if fg is not None:
                    adj.add(field, fg)
        elif type(node) is TupleGetItem:
            adj.add_field(node.tuple_value, node.index, adj.as_expr(node))
    grads = Tuple([adj.as_expr(p) for p in expr.params])
    return Function(list(expr.params), Tuple([body, grads]))
