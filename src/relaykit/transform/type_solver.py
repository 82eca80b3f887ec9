"""A type solver over unknown types and type relations (TVM's ``TypeSolver``).

Unknowns are :class:`~relaykit.ir.IncompleteType` objects (each one its own
unknown). :meth:`TypeSolver.unify` makes two types equal by binding unknowns;
:meth:`TypeSolver.add_constraint` records a :class:`~relaykit.ir.TypeRelation`
(its ``func`` names a relation: ``tvm.relay.type_relation.Broadcast``,
``...Identity``, or any global function ``rel(input_types, attrs) -> type``);
:meth:`TypeSolver.solve` applies the relations until nothing changes;
:meth:`TypeSolver.resolve` substitutes what was solved.

>>> from relaykit.ir import EnvFunc, IncompleteType, TensorType, TypeRelation
>>> s = TypeSolver()
>>> out = IncompleteType()
>>> bcast = EnvFunc.get("tvm.relay.type_relation.Broadcast")
>>> s.add_constraint(TypeRelation(bcast, [TensorType((3, 1)), TensorType((4,)), out], 2))
>>> s.solve(), str(s.resolve(out))
(True, 'Tensor[(3, 4), float32]')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from relaykit.errors import RelayKitError, RelayTypeError
from relaykit.ir.adt import GlobalTypeVar, TypeCall
from relaykit.ir.attrs import Attrs
from relaykit.ir.types import (
    FuncType,
    IncompleteType,
    RefType,
    TupleType,
    Type,
    TypeRelation,
    TypeVar,
)
from relaykit.op._relations import broadcast_rel
from relaykit.runtime.registry import get_global_func

__all__ = ["TypeSolver"]

_PREFIX = "tvm.relay.type_relation."


def _identity(inputs: Sequence[Type], attrs: Any) -> Type:
    return inputs[0]


#: relations known by name (the ones TVM's tests and scripts name through EnvFunc)
BUILTIN_RELATIONS: dict[str, Callable[[Sequence[Type], Any], Type]] = {
    "Broadcast": broadcast_rel,
    "Identity": _identity,
}


class TypeSolver:
    """Unification of types with unknowns, and relations solved to a fixed point."""

    def __init__(self) -> None:
        self.bound: dict[int, Type] = {}  # id(unknown) -> its solution
        self.keep: list[IncompleteType] = []  # keeps bound unknowns alive (ids stay unique)
        self.pending: list[TypeRelation] = []

    # -- TVM's names: the solver is also called with a method name -------------------
    def __call__(self, name: str) -> Callable[..., Any]:
        table: dict[str, Callable[..., Any]] = {
            "Solve": self.solve,
            "Unify": self.unify,
            "Resolve": self.resolve,
            "AddConstraint": self.add_constraint,
        }
        if name not in table:
            raise RelayKitError(f"the type solver has no method {name!r}; it has {sorted(table)}")
        return table[name]

    # -- substitution ------------------------------------------------------------------
    def resolve(self, t: Type) -> Type:
        """``t`` with every solved unknown replaced by its solution (recursively)."""
        tt = type(t)
        if isinstance(t, IncompleteType):
            sol = self.bound.get(id(t))
            return t if sol is None else self.resolve(sol)
        if tt is TupleType:
            return TupleType([self.resolve(f) for f in t.fields])  # type: ignore[attr-defined]
        if tt is FuncType:
            return FuncType(
                [self.resolve(a) for a in t.arg_types],  # type: ignore[attr-defined]
                self.resolve(t.ret_type),  # type: ignore[attr-defined]
                t.type_params,  # type: ignore[attr-defined]
                [self.resolve(c) for c in t.type_constraints],  # type: ignore[attr-defined]
            )
        if tt is TypeCall:
            return TypeCall(t.func, [self.resolve(a) for a in t.args])  # type: ignore[attr-defined]
        if tt is RefType:
            return RefType(self.resolve(t.value))  # type: ignore[attr-defined]
        if tt is TypeRelation:
            args = [self.resolve(a) for a in t.args]  # type: ignore[attr-defined]
            return TypeRelation(t.func, args, t.num_inputs, t.attrs)  # type: ignore[attr-defined]
        return t

    def occurs(self, hole: IncompleteType, t: Type) -> bool:
        t = self.resolve(t)
        if t is hole:
            return True
        parts: list[Type] = []
        if isinstance(t, TupleType):
            parts = list(t.fields)
        elif isinstance(t, FuncType):
            parts = [*t.arg_types, t.ret_type]
        elif isinstance(t, TypeCall):
            parts = list(t.args)
        elif isinstance(t, RefType):
            parts = [t.value]
        return any(self.occurs(hole, p) for p in parts)

    # -- unification -------------------------------------------------------------------
    def unify(self, lhs: Type, rhs: Type) -> Type:
        """The type ``lhs`` and ``rhs`` both become; a :class:`RelayTypeError` if none."""
        a, b = self.resolve(lhs), self.resolve(rhs)
        if a is b:
            return a
        for hole, other in ((a, b), (b, a)):
            if isinstance(hole, IncompleteType):
                if self.occurs(hole, other):
                    raise RelayTypeError(f"cannot unify {hole} with {other}: it contains itself")
                self.bound[id(hole)] = other
                self.keep.append(hole)
                return other
        ta = type(a)
        if ta is not type(b):
            raise RelayTypeError(f"cannot unify {a} with {b}")
        if ta is TupleType:
            if len(a.fields) != len(b.fields):  # type: ignore[attr-defined]
                raise RelayTypeError(f"cannot unify {a} with {b}: different numbers of fields")
            pairs = zip(a.fields, b.fields, strict=True)  # type: ignore[attr-defined]
            return TupleType([self.unify(x, y) for x, y in pairs])
        if ta is TypeCall:
            if a.func is not b.func or len(a.args) != len(b.args):  # type: ignore[attr-defined]
                raise RelayTypeError(f"cannot unify {a} with {b}")
            args = [self.unify(x, y) for x, y in zip(a.args, b.args, strict=True)]  # type: ignore[attr-defined]
            return TypeCall(a.func, args)  # type: ignore[attr-defined]
        if ta is RefType:
            return RefType(self.unify(a.value, b.value))  # type: ignore[attr-defined]
        if ta is FuncType:
            return self.unify_functions(a, b)  # type: ignore[arg-type]
        if ta in (TypeVar, GlobalTypeVar) or a != b:
            raise RelayTypeError(f"cannot unify {a} with {b}")
        return a

    def unify_functions(self, a: FuncType, b: FuncType) -> FuncType:
        """Unify two function types; the one with more type parameters has its extra
        parameters replaced by unknowns and the others renamed to the other's."""
        if len(a.arg_types) != len(b.arg_types) or len(a.type_constraints) != len(
            b.type_constraints
        ):
            raise RelayTypeError(f"cannot unify {a} with {b}: different arities")
        if len(a.type_params) < len(b.type_params):
            a, b = b, a
        rename: dict[TypeVar, Type] = dict(zip(a.type_params, b.type_params, strict=False))
        for tv in a.type_params[len(b.type_params) :]:
            rename[tv] = IncompleteType()
        a = _substitute(a, rename)  # type: ignore[assignment]
        args = [self.unify(x, y) for x, y in zip(a.arg_types, b.arg_types, strict=True)]
        ret = self.unify(a.ret_type, b.ret_type)
        pairs = zip(a.type_constraints, b.type_constraints, strict=True)
        cons = [self.unify(x, y) for x, y in pairs]
        return FuncType(args, ret, b.type_params, cons)

    # -- relations ---------------------------------------------------------------------
    def add_constraint(self, rel: Type) -> None:
        """Add a relation to solve (a :class:`TypeRelation`)."""
        if not isinstance(rel, TypeRelation):
            raise RelayTypeError(f"a constraint is a TypeRelation, got {rel!r}")
        self.pending.append(rel)

    def solve(self) -> bool:
        """Apply the pending relations until none makes progress; whether all were solved."""
        progress = True
        while progress and self.pending:
            progress = False
            for rel in list(self.pending):
                if self.apply(rel):
                    self.pending.remove(rel)
                    progress = True
        return not self.pending

    def apply(self, rel: TypeRelation) -> bool:
        """Solve one relation if its inputs are known (an identity in either direction)."""
        args = [self.resolve(a) for a in rel.args]
        inputs, outputs = args[: rel.num_inputs], args[rel.num_inputs :]
        name = getattr(rel.func, "name", "")
        short = name[len(_PREFIX) :] if name.startswith(_PREFIX) else name
        if short == "Identity":
            for out in outputs:
                self.unify(inputs[0], out)
            return True
        if any(self.has_unknown(t) for t in inputs) or not outputs:
            return False
        fn = BUILTIN_RELATIONS.get(short) or get_global_func(name)
        attrs = rel.attrs if rel.attrs is not None else Attrs({})
        self.unify(outputs[-1], fn(inputs, attrs))  # type: ignore[misc]
        return True

    def has_unknown(self, t: Type) -> bool:
        t = self.resolve(t)
        if isinstance(t, IncompleteType):
            return True
        if isinstance(t, TupleType):
            return any(self.has_unknown(f) for f in t.fields)
        if isinstance(t, FuncType):
            return any(self.has_unknown(p) for p in (*t.arg_types, t.ret_type))
        if isinstance(t, TypeCall):
            return any(self.has_unknown(p) for p in t.args)
        if isinstance(t, RefType):
            return self.has_unknown(t.value)
        return False


def _substitute(t: Type, mapping: dict[TypeVar, Type]) -> Type:
    if isinstance(t, TypeVar):
        return mapping.get(t, t)
    if isinstance(t, TupleType):
        return TupleType([_substitute(f, mapping) for f in t.fields])
    if isinstance(t, FuncType):
        return FuncType(
            [_substitute(a, mapping) for a in t.arg_types],
            _substitute(t.ret_type, mapping),
            [p for p in t.type_params if p not in mapping],
            [_substitute(c, mapping) for c in t.type_constraints],
        )
    if isinstance(t, TypeCall):
        return TypeCall(t.func, [_substitute(a, mapping) for a in t.args])
    if isinstance(t, RefType):
        return RefType(_substitute(t.value, mapping))
    return t
