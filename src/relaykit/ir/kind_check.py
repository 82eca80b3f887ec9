"""Kind checking: which :class:`~relaykit.ir.types.TypeKind` a type has, and whether
its parts have the kinds their places need (TVM's ``relay.analysis.check_kind``).

Tensor, tuple, function and reference types have kind ``Type``; a type relation
has kind ``Constraint``; a type variable or a global type variable has the kind it
was declared with. A tuple field, a function's argument and result types, a
reference's value and a type call's arguments must have kind ``Type``; a function's
constraints must be ``Constraint``; a type call's callee must be an ADT handle
defined in the module, applied to as many arguments as it has type parameters.

>>> from relaykit.ir import TensorType, TupleType, TypeVar, TypeKind
>>> check_kind(TupleType([TensorType((2,)), TypeVar("a")])) is TypeKind.Type
True
>>> try:
...     check_kind(TupleType([TypeVar("n", TypeKind.ShapeVar)]))
... except RelayTypeError as err:
...     print(str(err).split(", but")[0])
kind error: field 0 of tuple type (n,) has kind ShapeVar
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import RelayTypeError

from .adt import GlobalTypeVar, TypeCall, TypeData
from .types import (
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeKind,
    TypeRelation,
    TypeVar,
)

__all__ = ["check_kind"]


def check_kind(t: Any, mod: Any = None) -> TypeKind:
    """The kind of ``t``; a :class:`RelayTypeError` naming the first part of the wrong
    kind. ``mod`` (an ``IRModule``) holds the type definitions type calls refer to."""
    return _KindChecker(mod).kind(t)


class _KindChecker:
    def __init__(self, mod: Any) -> None:
        self.mod = mod

    def kind(self, t: Any) -> TypeKind:
        if isinstance(t, (TypeVar, GlobalTypeVar)):
            return TypeKind(t.kind)
        if isinstance(t, (TensorType, IncompleteType)):
            return TypeKind.Type
        if isinstance(t, TupleType):
            for i, f in enumerate(t.fields):
                self.require(f, TypeKind.Type, f"field {i} of tuple type {t}", "a tuple field")
            return TypeKind.Type
        if isinstance(t, FuncType):
            return self.func_kind(t)
        if isinstance(t, RefType):
            self.require(t.value, TypeKind.Type, f"the value of {t}", "a reference's value")
            return TypeKind.Type
        if isinstance(t, TypeRelation):
            for i, a in enumerate(t.args):
                self.require(a, TypeKind.Type, f"argument {i} of relation {t}", "its argument")
            return TypeKind.Constraint
        if isinstance(t, TypeCall):
            return self.call_kind(t)
        if isinstance(t, TypeData):
            return TypeKind.TypeData
        raise RelayTypeError(f"kind error: {t!r} is not a Relay type")

    def func_kind(self, t: FuncType) -> TypeKind:
        for i, a in enumerate(t.arg_types):
            self.require(a, TypeKind.Type, f"argument {i} of {t}", "a function argument")
        self.require(t.ret_type, TypeKind.Type, f"the result of {t}", "a function result")
        for c in t.type_constraints:
            self.require(c, TypeKind.Constraint, f"constraint {c} of {t}", "a constraint")
        return TypeKind.Type

    def call_kind(self, t: TypeCall) -> TypeKind:
        func = t.func
        if not isinstance(func, GlobalTypeVar) or self.kind(func) is not TypeKind.AdtHandle:
            raise RelayTypeError(
                f"kind error: type call {t} applies {func}, which is not an ADT handle "
                "(a GlobalTypeVar of kind AdtHandle)"
            )
        for i, a in enumerate(t.args):
            self.require(a, TypeKind.Type, f"argument {i} of {t}", "a type argument")
        defs = getattr(self.mod, "type_definitions", {})
        data = defs.get(func)
        if data is None:
            raise RelayTypeError(
                f"kind error: type call {t} refers to {func}, which is not defined in the "
                "module; pass the module that defines it: check_kind(t, mod)"
            )
        if len(data.type_vars) != len(t.args):
            raise RelayTypeError(
                f"kind error: {func} takes {len(data.type_vars)} type argument(s), "
                f"{t} gives {len(t.args)}"
            )
        return TypeKind.Type

    def require(self, t: Type, want: TypeKind, what: str, place: str) -> None:
        got = self.kind(t)
        if got is not want:
            raise RelayTypeError(
                f"kind error: {what} has kind {got.name}, but {place} must have kind {want.name}"
            )
