"""Structural equality of types under a mapping of type variables.

Inside a structural comparison, type variables are matched like expression
variables: the type parameters of a function (or a function type) are bound to
each other in order, and free ones are mapped on first sight when free variables
may be mapped. Global type variables are names in a module and compare by name.
:func:`type_shape_key` is a hash key consistent with that equality.

>>> from relaykit.ir.types import FuncType, TypeVar
>>> a, b = TypeVar("a"), TypeVar("b")
>>> TypeMap(map_free_vars=True).equal(FuncType([a], a), FuncType([b], b))
True
>>> TypeMap(map_free_vars=False).equal(FuncType([a], a), FuncType([b], b))
False
"""

from __future__ import annotations

from typing import Any

from .adt import GlobalTypeVar, TypeCall
from .symbolic import PrimExpr, SymExpr
from .symbolic import Var as SymVar
from .types import FuncType, RefType, TensorType, TupleType, Type, TypeRelation, TypeVar

__all__ = ["TypeMap", "type_shape_key"]


class TypeMap:
    """A bijection between the type variables of two values being compared."""

    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        self.lmap: dict[TypeVar, TypeVar] = {}
        self.rmap: dict[TypeVar, TypeVar] = {}
        # shape variables (te.var / te.size_var) matched so far, by id, both ways
        self.ldims: dict[int, SymVar] = {}
        self.rdims: dict[int, SymVar] = {}

    def bind(self, lhs: Any, rhs: Any) -> bool:
        """Bind two sequences of type parameters position by position."""
        if len(lhs) != len(rhs):
            return False
        for a, b in zip(lhs, rhs, strict=True):
            if not (isinstance(a, TypeVar) and isinstance(b, TypeVar)) or a.kind != b.kind:
                return False
            if self.lmap.get(a, b) is not b or self.rmap.get(b, a) is not a:
                return False
            self.lmap[a], self.rmap[b] = b, a
        return True

    def equal(self, a: Any, b: Any) -> bool:
        """Whether the types ``a`` and ``b`` are equal under (and extending) the map."""
        if a is b:
            return not isinstance(a, TypeVar) or self.lmap.get(a, a) is a
        ta = type(a)
        if ta is not type(b):
            return False
        rule = _RULES.get(ta)
        return bool(a == b) if rule is None else rule(self, a, b)

    def type_var(self, a: TypeVar, b: TypeVar) -> bool:
        mapped = self.lmap.get(a)
        if mapped is not None:
            return mapped is b
        if b in self.rmap or not self.map_free_vars or a.kind != b.kind:
            return False
        self.lmap[a], self.rmap[b] = b, a
        return True

    def all_equal(self, xs: Any, ys: Any) -> bool:
        return len(xs) == len(ys) and all(map(self.equal, xs, ys))

    def func_type(self, a: FuncType, b: FuncType) -> bool:
        return (
            self.bind(a.type_params, b.type_params)
            and self.all_equal(a.arg_types, b.arg_types)
            and self.equal(a.ret_type, b.ret_type)
            and self.all_equal(a.type_constraints, b.type_constraints)
        )

    def tensor_type(self, a: TensorType, b: TensorType) -> bool:
        if a.dtype != b.dtype or len(a.shape) != len(b.shape):
            return False
        return all(
            self.dim(x, y) if isinstance(x, PrimExpr) or isinstance(y, PrimExpr) else x == y
            for x, y in zip(a.shape, b.shape, strict=True)
        )

    def dim(self, a: Any, b: Any) -> bool:
        """Two symbolic dimensions equal once their shape variables are matched (as TVM
        matches the size variables of two functions' parameter types on first sight)."""
        if isinstance(a, SymVar) and isinstance(b, SymVar):
            seen_l, seen_r = self.ldims.get(id(a)), self.rdims.get(id(b))
            if seen_l is None and seen_r is None:
                if a.dtype != b.dtype:
                    return False
                self.ldims[id(a)], self.rdims[id(b)] = b, a
                return True
            return seen_l is b and seen_r is a
        if isinstance(a, SymExpr) and isinstance(b, SymExpr):
            if len(a.terms) != len(b.terms):
                return False
            rest = list(b.terms)
            for mono, coeff in a.terms:
                hit = next(
                    (
                        t
                        for t in rest
                        if t[1] == coeff
                        and len(t[0]) == len(mono)
                        and all(self.dim(x, y) for x, y in zip(mono, t[0], strict=True))
                    ),
                    None,
                )
                if hit is None:
                    return False
                rest.remove(hit)
            return True
        if isinstance(a, PrimExpr) and isinstance(b, PrimExpr):
            return a == b
        return bool(a == b)  # ints (a monomial's atoms may be plain numbers)

    def relation(self, a: TypeRelation, b: TypeRelation) -> bool:
        same = a.func == b.func and a.num_inputs == b.num_inputs and a.attrs == b.attrs
        return same and self.all_equal(a.args, b.args)


_RULES: dict[type, Any] = {
    TypeVar: TypeMap.type_var,
    GlobalTypeVar: lambda m, a, b: bool(a.name_hint == b.name_hint and a.kind == b.kind),
    TupleType: lambda m, a, b: m.all_equal(a.fields, b.fields),
    RefType: lambda m, a, b: m.equal(a.value, b.value),
    TypeCall: lambda m, a, b: m.equal(a.func, b.func) and m.all_equal(a.args, b.args),
    FuncType: TypeMap.func_type,
    TypeRelation: TypeMap.relation,
    TensorType: TypeMap.tensor_type,
}


def type_shape_key(t: Any) -> Any:
    """A hash key of ``t`` that equal types (under any type-variable map) share."""
    tt = type(t)
    if tt is TypeVar:
        return ("tv", int(t.kind))
    if tt is GlobalTypeVar:
        return ("gtv", t.name_hint)
    if tt is TupleType:
        return ("tuple", tuple(type_shape_key(f) for f in t.fields))
    if tt is RefType:
        return ("ref", type_shape_key(t.value))
    if tt is TypeCall:
        return ("call", type_shape_key(t.func), tuple(type_shape_key(x) for x in t.args))
    if tt is FuncType:
        parts = (*t.arg_types, t.ret_type, *t.type_constraints)
        return ("fn", len(t.type_params), tuple(type_shape_key(p) for p in parts))
    if tt is TypeRelation:
        return ("rel", t.func, t.num_inputs, tuple(type_shape_key(x) for x in t.args))
    if isinstance(t, Type):
        try:
            hash(t)
        except TypeError:
            return ("type", tt.__name__)
        return t
    return t
