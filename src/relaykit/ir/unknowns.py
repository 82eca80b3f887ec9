"""The unknown types of one run of the type checker, and walks over types that find,
replace or substitute them (:func:`substitute` replaces type variables).

>>> from relaykit.ir.types import TupleType, TypeVar
>>> u = Unknown(None)
>>> unknowns(TupleType([u, TypeVar("a")])) == [u]
True
>>> str(incomplete_unknowns(TupleType([u])))
'(?,)'
"""

from __future__ import annotations

from collections.abc import Mapping

from .adt import TypeCall
from .expr import Expr
from .types import FuncType, IncompleteType, RefType, TupleType, Type, TypeVar

__all__ = ["Unknown", "unknowns", "incomplete_unknowns", "substitute", "has_unknown"]


class Unknown(IncompleteType):
    """An unknown type of one run of the checker, standing for the type of ``origin``
    until unification solves it. Unlike :class:`IncompleteType` values, each unknown
    is equal only to itself."""

    __slots__ = ("origin",)
    origin: Expr | None

    def __init__(self, origin: Expr | None) -> None:
        object.__setattr__(self, "kind", 0)
        object.__setattr__(self, "origin", origin)

    __eq__ = object.__eq__
    __hash__ = object.__hash__


def unknowns(t: Type) -> list[Unknown]:
    """The unknowns inside ``t``, outermost first."""
    tt = type(t)
    if tt is Unknown:
        return [t]  # type: ignore[list-item]
    if tt is TupleType:
        return [u for f in t.fields for u in unknowns(f)]  # type: ignore[attr-defined]
    if tt is FuncType:
        parts = (*t.arg_types, t.ret_type)  # type: ignore[attr-defined]
        return [u for p in parts for u in unknowns(p)]
    if tt is TypeCall:
        return [u for a in t.args for u in unknowns(a)]  # type: ignore[attr-defined]
    if tt is RefType:
        return unknowns(t.value)  # type: ignore[attr-defined]
    return []


def incomplete_unknowns(t: Type) -> Type:
    """``t`` with each unknown replaced by a plain :class:`IncompleteType`."""
    tt = type(t)
    if tt is Unknown:
        return IncompleteType()
    if tt is TupleType:
        return TupleType([incomplete_unknowns(f) for f in t.fields])  # type: ignore[attr-defined]
    if tt is FuncType:
        args = [incomplete_unknowns(a) for a in t.arg_types]  # type: ignore[attr-defined]
        return FuncType(args, incomplete_unknowns(t.ret_type), t.type_params)  # type: ignore[attr-defined]
    if tt is TypeCall:
        return TypeCall(t.func, [incomplete_unknowns(a) for a in t.args])  # type: ignore[attr-defined]
    if tt is RefType:
        return RefType(incomplete_unknowns(t.value))  # type: ignore[attr-defined]
    return t


def substitute(t: Type, mapping: Mapping[Type, Type]) -> Type:
    """``t`` with the type variables of ``mapping`` replaced."""
    tt = type(t)
    if tt is TypeVar:
        return mapping.get(t, t)
    if tt is TupleType:
        return TupleType([substitute(f, mapping) for f in t.fields])  # type: ignore[attr-defined]
    if tt is FuncType:
        inner = {k: v for k, v in mapping.items() if k not in t.type_params}  # type: ignore[attr-defined]
        args = [substitute(a, inner) for a in t.arg_types]  # type: ignore[attr-defined]
        return FuncType(args, substitute(t.ret_type, inner), t.type_params)  # type: ignore[attr-defined]
    if tt is TypeCall:
        return TypeCall(t.func, [substitute(a, mapping) for a in t.args])  # type: ignore[attr-defined]
    if tt is RefType:
        return RefType(substitute(t.value, mapping))  # type: ignore[attr-defined]
    return t


def has_unknown(t: Type) -> bool:
    return bool(unknowns(t))
