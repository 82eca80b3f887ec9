"""Mutable references: ``ref(v)`` makes a cell, ``ref_read(r)`` reads it and
``ref_write(r, v)`` stores ``v`` in it (returning the empty tuple).

A reference has type :class:`~relaykit.ir.types.RefType`; the cell is created
each time ``RefCreate`` is evaluated, so two evaluations give two cells.

>>> from relaykit.ir import TensorType, Var
>>> x = Var("x", TensorType((2,)))
>>> r = RefCreate(x)
>>> RefRead(r).ref is r, RefWrite(r, x).value is x
(True, True)
"""

from __future__ import annotations

from typing import Any

from .expr import Expr, Span, _as_expr, _set
from .fields import child_field, node_class

__all__ = ["RefCreate", "RefRead", "RefWrite"]


@node_class
class RefCreate(Expr):
    """``ref(value)``: a new mutable cell holding ``value``."""

    value: Expr = child_field()

    def __init__(self, value: Any, span: Span | None = None) -> None:
        _set(self, "value", _as_expr(value, "RefCreate.value"))
        _set(self, "_checked_type", None)
        _set(self, "span", span)


@node_class
class RefRead(Expr):
    """``ref_read(ref)``: the value the cell ``ref`` holds now."""

    ref: Expr = child_field()

    def __init__(self, ref: Any, span: Span | None = None) -> None:
        _set(self, "ref", _as_expr(ref, "RefRead.ref"))
        _set(self, "_checked_type", None)
        _set(self, "span", span)


@node_class
class RefWrite(Expr):
    """``ref_write(ref, value)``: store ``value`` in the cell ``ref``; its value is ``()``."""

    ref: Expr = child_field()
    value: Expr = child_field()

    def __init__(self, ref: Any, value: Any, span: Span | None = None) -> None:
        _set(self, "ref", _as_expr(ref, "RefWrite.ref"))
        _set(self, "value", _as_expr(value, "RefWrite.value"))
        _set(self, "_checked_type", None)
        _set(self, "span", span)
