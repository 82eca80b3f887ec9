"""Algebraic data types: type definitions, constructors, ``match`` and its patterns.

A type definition (:class:`TypeData`) names a :class:`GlobalTypeVar` with type
parameters and lists its constructors; ``List[a]`` is the type
``TypeCall(List, [a])``. A :class:`Constructor` is an expression: calling it
builds a value (``cons(x, nil())``). :class:`Match` takes a value apart by
trying each :class:`Clause`'s pattern in order.

>>> from relaykit.ir import TensorType, TypeVar
>>> a = TypeVar("a")
>>> opt = GlobalTypeVar("Option")
>>> some, none = Constructor("Some", [a], opt), Constructor("None", [], opt)
>>> td = TypeData(opt, [a], [some, none])
>>> some.tag + 1 == none.tag, str(TypeCall(opt, [TensorType((), "int32")]))
(True, 'Option[int32]')
"""

from __future__ import annotations

import operator
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from relaykit.errors import IRError

from .expr import Expr, Span, Var, _as_expr, _set
from .fields import child_field, children_field, data_field, node_class
from .types import FuncType, Type, TypeKind, TypeVar

__all__ = [
    "GlobalTypeVar",
    "TypeCall",
    "TypeData",
    "Constructor",
    "Pattern",
    "PatternWildcard",
    "PatternVar",
    "PatternConstructor",
    "PatternTuple",
    "Clause",
    "Match",
    "pattern_vars",
    "constructor_type",
    "constructor_tag_base",
]


class GlobalTypeVar(Type):
    """The name of a type definition in a module (``List``, ``Option``).

    Compared by identity, like :class:`~relaykit.ir.GlobalVar`.
    """

    __slots__ = ("kind", "name_hint")
    name_hint: str
    kind: TypeKind

    def __init__(self, name_hint: str, kind: TypeKind = TypeKind.AdtHandle) -> None:
        object.__setattr__(self, "name_hint", str(name_hint))
        object.__setattr__(self, "kind", kind)

    def __setattr__(self, name: str, value: Any) -> None:
        raise IRError("GlobalTypeVar is immutable")

    def __str__(self) -> str:
        return self.name_hint

    def __repr__(self) -> str:
        return f"GlobalTypeVar({self.name_hint!r})"

    def __call__(self, *args: Type) -> TypeCall:
        """``List(a)`` is the type ``List[a]`` (a :class:`TypeCall`), as in TVM."""
        return TypeCall(self, args)


@dataclass(frozen=True, slots=True)
class TypeCall(Type):
    """A type definition applied to type arguments: ``List[int32]``."""

    func: Type
    args: tuple[Type, ...]

    def __init__(self, func: Type, args: Sequence[Type] = ()) -> None:
        items = tuple(args)
        for a in items:
            if not isinstance(a, Type):
                raise IRError(f"TypeCall argument {a!r} is not a Type")
        object.__setattr__(self, "func", func)
        object.__setattr__(self, "args", items)

    def __str__(self) -> str:
        if not self.args:
            return str(self.func)
        return f"{self.func}[{', '.join(str(a) for a in self.args)}]"


@node_class
class Constructor(Expr):
    """A constructor of an ADT: ``Cons(a, List[a])``; its ``tag`` is its position in the
    type definition (set by :class:`TypeData`)."""

    name_hint: str = data_field()
    inputs: tuple[Type, ...] = data_field()
    belong_to: GlobalTypeVar = data_field()

    __slots__ = ("tag", "type_vars")
    tag: int
    type_vars: tuple[TypeVar, ...]

    def __init__(
        self,
        name_hint: str,
        inputs: Sequence[Type],
        belong_to: GlobalTypeVar,
        span: Span | None = None,
    ) -> None:
        if not isinstance(belong_to, GlobalTypeVar):
            raise IRError(
                f"constructor {name_hint} must belong to a GlobalTypeVar, got {belong_to!r}"
            )
        _set(self, "name_hint", str(name_hint))
        _set(self, "inputs", tuple(inputs))
        _set(self, "belong_to", belong_to)
        _set(self, "tag", -1)
        _set(self, "type_vars", ())
        _set(self, "_checked_type", None)
        _set(self, "span", span)


class TypeData:
    """A type definition: ``type List[a] { Cons(a, List[a]), Nil }``."""

    def __init__(
        self,
        header: GlobalTypeVar,
        type_vars: Sequence[TypeVar],
        constructors: Sequence[Constructor],
    ) -> None:
        if not isinstance(header, GlobalTypeVar):
            raise IRError(f"a type definition is named by a GlobalTypeVar, got {header!r}")
        self.header = header
        self.type_vars = tuple(type_vars)
        self.constructors = tuple(constructors)
        base = constructor_tag_base(header.name_hint)
        for i, c in enumerate(self.constructors):
            if c.belong_to is not header:
                raise IRError(
                    f"constructor {c.name_hint} belongs to {c.belong_to}, not to {header}"
                )
            _set(c, "tag", base + i)
            _set(c, "type_vars", self.type_vars)

    def __eq__(self, other: object) -> bool:
        """Same header, type parameters and constructors (compared by identity)."""
        if not isinstance(other, TypeData):
            return NotImplemented
        return (
            self.header is other.header
            and self.type_vars == other.type_vars
            and len(self.constructors) == len(other.constructors)
            and all(map(operator.is_, self.constructors, other.constructors))
        )

    def __hash__(self) -> int:
        return hash((id(self.header), self.type_vars, tuple(map(id, self.constructors))))

    def __repr__(self) -> str:
        names = ", ".join(c.name_hint for c in self.constructors)
        return f"TypeData({self.header}, [{', '.join(map(str, self.type_vars))}], [{names}])"


def constructor_tag_base(type_name: str) -> int:
    """The tag of the first constructor of the type named ``type_name``; the others follow
    it. Derived from the name, so one type's constructors have the same tags in every
    module, and the tags of different types rarely meet (none is 0, a tuple's tag)."""
    return ((zlib.crc32(type_name.encode()) & 0x7FFF) | 0x8000) << 16


def constructor_type(con: Constructor) -> FuncType:
    """The polymorphic function type of ``con``: ``fn [a] (a, List[a]) -> List[a]``."""
    tvars = con.type_vars
    return FuncType(con.inputs, TypeCall(con.belong_to, tvars), tvars)


# -- patterns --------------------------------------------------------------------------------


class Pattern:
    """Base class of match patterns."""

    __slots__ = ()


@dataclass(frozen=True, eq=False, slots=True)
class PatternWildcard(Pattern):
    """``_``: matches anything, binds nothing."""


@dataclass(frozen=True, eq=False, slots=True)
class PatternVar(Pattern):
    """A variable: matches anything and binds it."""

    var: Var


@dataclass(frozen=True, eq=False, slots=True)
class PatternConstructor(Pattern):
    """``Cons(p1, p2)``: a value built by ``constructor`` whose fields match ``patterns``."""

    constructor: Constructor
    patterns: tuple[Pattern, ...] = ()

    def __init__(self, constructor: Constructor, patterns: Sequence[Pattern] | None = None):
        object.__setattr__(self, "constructor", constructor)
        object.__setattr__(self, "patterns", tuple(patterns or ()))


@dataclass(frozen=True, eq=False, slots=True)
class PatternTuple(Pattern):
    """``(p1, p2)``: a tuple whose fields match ``patterns``."""

    patterns: tuple[Pattern, ...] = ()

    def __init__(self, patterns: Sequence[Pattern] | None = None):
        object.__setattr__(self, "patterns", tuple(patterns or ()))


def pattern_vars(pattern: Pattern) -> Iterator[Var]:
    """The variables ``pattern`` binds, left to right."""
    stack = [pattern]
    while stack:
        p = stack.pop()
        if isinstance(p, PatternVar):
            yield p.var
        elif isinstance(p, (PatternConstructor, PatternTuple)):
            stack.extend(reversed(p.patterns))


@node_class
class Clause(Expr):
    """One arm of a match: ``lhs => rhs``."""

    lhs: Pattern = data_field()
    rhs: Expr = child_field()

    def __init__(self, lhs: Pattern, rhs: Any, span: Span | None = None) -> None:
        if not isinstance(lhs, Pattern):
            raise IRError(f"a clause's left-hand side must be a Pattern, got {lhs!r}")
        _set(self, "lhs", lhs)
        _set(self, "rhs", _as_expr(rhs, "Clause.rhs"))
        _set(self, "_checked_type", None)
        _set(self, "span", span)


@node_class
class Match(Expr):
    """``match (data) { clauses }``: the first clause whose pattern matches; ``complete``
    says the clauses cover every value (TVM's ``match`` vs ``match?``)."""

    data: Expr = child_field()
    clauses: tuple[Clause, ...] = children_field()
    complete: bool = data_field()

    def __init__(
        self, data: Any, clauses: Sequence[Clause], complete: bool = True, span: Span | None = None
    ) -> None:
        cs = tuple(clauses)
        for c in cs:
            if not isinstance(c, Clause):
                raise IRError(f"Match takes Clause objects, got {c!r}")
        _set(self, "data", _as_expr(data, "Match.data"))
        _set(self, "clauses", cs)
        _set(self, "complete", bool(complete))
        _set(self, "_checked_type", None)
        _set(self, "span", span)
