"""What the operators of a function read besides each other: its inputs, its weights and
its constants; what it returns; and how tensor types and attributes print in the report.

:func:`function_reads` walks one function once (iteratively, linear in its size) and
gives, for every labelled call, per argument: the labelled calls and the leaf values
(parameters, free variables, constants) that argument reads through tuples, tuple
projections and let-bindings, and the argument's type; and the same for each field of
the function's result.

>>> from relaykit.ir import Call, Function, Var, TensorType, get_op
>>> x = Var("x", TensorType((2, 3)))
>>> a = Call(get_op("abs"), [x])
>>> reads = function_reads(Function([x], a), {a: 0}.get)
>>> [(labels, [v.name_hint for v in vals]) for labels, vals, _ in reads.calls[0]]
[((), ['x'])]
>>> reads.outputs[0][0]
(0,)
>>> type_text(TensorType((1, 64, 56, 56), "float32"))
'float32[1,64,56,56]'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relaykit.byoc._common import data_children
from relaykit.ir.expr import Call, Constant, Expr, Function, Let, Tuple, Var, checked_type_or_none
from relaykit.ir.functor import post_order
from relaykit.ir.types import TensorType, TupleType, Type

__all__ = [
    "Read",
    "FunctionReads",
    "function_reads",
    "type_text",
    "attrs_text",
    "span_text",
    "constant_text",
]

#: One argument (or result field): the labels of the calls it reads, the leaf values
#: (``Var`` or ``Constant``) it reads, and its type as text.
Read = tuple[tuple[int, ...], tuple[Expr, ...], str]


@dataclass
class FunctionReads:
    """The reads of one function: per labelled call, per argument; per result field."""

    calls: dict[int, list[Read]] = field(default_factory=dict)
    outputs: list[Read] = field(default_factory=list)


def _composite(node: Expr) -> bool:
    return type(node) is Function and "Composite" in node.attrs


def function_reads(fn: Function, label_of: Callable[[Call], int | None]) -> FunctionReads:
    """What every labelled call of ``fn`` and its result read (see the module's doc)."""
    nodes = list(post_order(fn.body, skip=_composite))
    bound: dict[Var, Expr] = {n.var: n.value for n in nodes if type(n) is Let}
    memo: dict[int, tuple[Expr, ...]] = {}
    labels: dict[int, int] = {}

    def look(node: Expr) -> tuple[Expr, ...]:
        while type(node) is Var and node in bound:
            node = bound[node]
        return memo.get(id(node), ())

    out = FunctionReads()
    for node in nodes:
        t = type(node)
        if isinstance(node, Call):
            k = label_of(node)
            if k is not None:
                labels[id(node)] = k
                memo[id(node)] = (node,)
                out.calls[k] = [_read(look(a), labels, a) for a in node.args]
                continue
        if (t is Var and node not in bound) or t is Constant:
            memo[id(node)] = (node,)
            continue
        if t is Function:
            continue
        merged: dict[int, Expr] = {}
        for kid in data_children(node):
            for leaf in look(kid):
                merged.setdefault(id(leaf), leaf)
        if merged:
            memo[id(node)] = tuple(merged.values())
    body = fn.body
    while type(body) is Let:
        body = body.body
    fields = body.fields if type(body) is Tuple else (fn.body,)
    out.outputs = [_read(look(f), labels, f) for f in fields]
    return out


def _read(leaves: tuple[Expr, ...], labels: dict[int, int], arg: Expr) -> Read:
    calls = tuple(labels[id(n)] for n in leaves if id(n) in labels)
    values = tuple(n for n in leaves if id(n) not in labels)
    return calls, values, type_text(_type_of(arg))


def _type_of(e: Expr) -> Type | None:
    ty = checked_type_or_none(e)
    if ty is None and type(e) is Var:
        ty = e.type_annotation
    if ty is None and type(e) is Constant:
        ty = TensorType(e.data.shape, str(e.data.dtype))
    return ty


def type_text(ty: Type | None) -> str:
    """A tensor type as netron writes it, ``float32[1,64,56,56]``; a tuple's fields in
    parentheses; ``?`` when unknown."""
    if ty is None:
        return "?"
    if type(ty) is TensorType:
        return f"{ty.dtype}[{','.join(str(d) for d in ty.shape)}]"
    if type(ty) is TupleType:
        return "(" + ", ".join(type_text(f) for f in ty.fields) + ")"
    return str(ty)


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_value_text(v) for v in value) + ")"
    return str(value)


def attrs_text(attrs: Mapping[str, Any] | None) -> dict[str, str]:
    """An operator's attributes as text, leaving out the unset ones (``None``, ``''``)."""
    if not attrs:
        return {}
    return {k: _value_text(v) for k, v in attrs.items() if v is not None and v != ""}


def span_text(e: Expr) -> str | None:
    """Where ``e`` came from, as its span names it: a source node's name (a span with
    no line), or ``file:line:column``; None when the expression has no span."""
    span = getattr(e, "span", None)
    if span is None or not span.source_name:
        return None
    if not span.line:
        return str(span.source_name)
    return f"{span.source_name}:{span.line}:{span.column}"


def constant_text(c: Constant) -> str:
    """A constant's label: its value when it is a scalar, else its shape (``64x3x7x7``
    written with times signs)."""
    if c.is_scalar:
        return _value_text(np.asarray(c.data.numpy()).item())
    return "\u00d7".join(str(d) for d in c.data.shape)
