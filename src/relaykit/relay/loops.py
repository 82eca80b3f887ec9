"""``tvm.relay.loops``: loops as tail-recursive local functions.

``while_loop(cond, loop_vars, body)`` is a function of the loop variables that
calls itself with ``body``'s new values while ``cond`` holds and returns the
tuple of the final values. The VM runs it on its own frame stack, so the
number of iterations is not limited by Python's recursion limit.

>>> from relaykit import relay
>>> i = relay.var("i", shape=(), dtype="int32")
>>> loop = while_loop(lambda i: i < relay.const(5), [i], lambda i: [i + relay.const(1)])
>>> type(loop).__name__
'Let'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from relaykit.ir.expr import Call, Expr, Function, If, Let, Tuple, Var, checked_type_or_none
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import FuncType, TupleType, Type

__all__ = ["while_loop"]


def _type_of(value: Expr) -> Type | None:
    if isinstance(value, Var) and value.type_annotation is not None:
        return value.type_annotation
    t = checked_type_or_none(value)
    if t is None:
        t = infer_type_local(value)
    return t


def while_loop(
    cond: Callable[..., Expr],
    loop_vars: Sequence[Expr],
    loop_bodies: Callable[..., Any],
) -> Expr:
    """A loop function: ``cond(*vars)`` decides, ``loop_bodies(*vars)`` gives the next
    values; call the result with the initial values to get the tuple of final values."""
    params = []
    for i, v in enumerate(loop_vars):
        name = v.name_hint if isinstance(v, Var) else f"arg{i}"
        params.append(Var(name, _type_of(v)))
    types = [p.type_annotation for p in params]
    loop_type = None
    if all(t is not None for t in types):
        loop_type = FuncType(types, TupleType(types))  # type: ignore[arg-type]
    loop = Var("while_loop", loop_type)
    again = Call(loop, list(loop_bodies(*params)))
    body = If(cond(*params), again, Tuple(params))
    return Let(loop, Function(params, body, loop_type.ret_type if loop_type else None), loop)
