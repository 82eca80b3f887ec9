"""``tvm.relay.type_functor``: visitors and mutators over Relay types.

A :class:`TypeFunctor` dispatches on a type's class to ``visit_tensor_type``,
``visit_tuple_type``, ``visit_func_type``...; :class:`TypeVisitor` walks every
sub-type, :class:`TypeMutator` rebuilds a type from its visited parts.

>>> from relaykit import relay
>>> class Float16(TypeMutator):
...     def visit_tensor_type(self, tt):
...         return relay.TensorType(tt.shape, "float16")
>>> print(Float16().visit(relay.TupleType([relay.TensorType((2,)), relay.scalar_type("int8")])))
(Tensor[(2), float16], float16)
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import ArgumentError
from relaykit.ir.adt import GlobalTypeVar, TypeCall, TypeData
from relaykit.ir.types import (
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeRelation,
    TypeVar,
)

__all__ = ["TypeFunctor", "TypeVisitor", "TypeMutator"]

_METHODS: dict[type, str] = {
    TensorType: "visit_tensor_type",
    TupleType: "visit_tuple_type",
    TypeVar: "visit_type_var",
    FuncType: "visit_func_type",
    IncompleteType: "visit_incomplete_type",
    TypeCall: "visit_type_call",
    GlobalTypeVar: "visit_global_type_var",
    TypeData: "visit_type_data",
    RefType: "visit_ref_type",
    TypeRelation: "visit_type_relation",
}


class TypeFunctor:
    """Dispatches :meth:`visit` on the type's class; results are memoized per type."""

    def __init__(self) -> None:
        self.memo_map: dict[Any, Any] = {}

    def visit(self, typ: Any) -> Any:
        if typ in self.memo_map:
            return self.memo_map[typ]
        method = next((m for cls, m in _METHODS.items() if isinstance(typ, cls)), None)
        if method is None:
            raise ArgumentError(f"TypeFunctor cannot visit {typ!r}: not a Relay type")
        result = getattr(self, method)(typ)
        self.memo_map[typ] = result
        return result

    def _missing(self, typ: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not visit {type(typ).__name__}")

    visit_tensor_type = visit_tuple_type = visit_type_var = visit_func_type = _missing
    visit_incomplete_type = visit_type_call = visit_global_type_var = _missing
    visit_type_data = visit_ref_type = visit_type_relation = _missing


class TypeVisitor(TypeFunctor):
    """Visits every sub-type of a type (override the ``visit_*`` methods you need)."""

    def visit_tensor_type(self, tt: TensorType) -> None:
        pass

    def visit_type_var(self, tv: TypeVar) -> None:
        pass

    def visit_incomplete_type(self, it: IncompleteType) -> None:
        pass

    def visit_global_type_var(self, gtv: GlobalTypeVar) -> None:
        pass

    def visit_tuple_type(self, tt: TupleType) -> None:
        for field in tt.fields:
            self.visit(field)

    def visit_func_type(self, ft: FuncType) -> None:
        for t in (*ft.type_params, *ft.arg_types, ft.ret_type, *ft.type_constraints):
            self.visit(t)

    def visit_type_call(self, tc: TypeCall) -> None:
        self.visit(tc.func)
        for arg in tc.args:
            self.visit(arg)

    def visit_ref_type(self, rt: RefType) -> None:
        self.visit(rt.value)

    def visit_type_relation(self, tr: TypeRelation) -> None:
        for arg in tr.args:
            self.visit(arg)

    def visit_type_data(self, td: TypeData) -> None:
        self.visit(td.header)
        for tv in td.type_vars:
            self.visit(tv)


class TypeMutator(TypeFunctor):
    """Rebuilds a type from its visited sub-types (leaves are returned unchanged)."""

    def visit_tensor_type(self, tt: TensorType) -> Type:
        return tt

    def visit_type_var(self, tv: TypeVar) -> Type:
        return tv

    def visit_incomplete_type(self, it: IncompleteType) -> Type:
        return it

    def visit_global_type_var(self, gtv: GlobalTypeVar) -> Type:
        return gtv

    def visit_tuple_type(self, tt: TupleType) -> Type:
        return TupleType([self.visit(f) for f in tt.fields])

    def visit_func_type(self, ft: FuncType) -> Type:
        return FuncType(
            [self.visit(a) for a in ft.arg_types],
            self.visit(ft.ret_type),
            [self.visit(p) for p in ft.type_params],
            [self.visit(c) for c in ft.type_constraints],
        )

    def visit_type_call(self, tc: TypeCall) -> Type:
        return TypeCall(self.visit(tc.func), [self.visit(a) for a in tc.args])

    def visit_ref_type(self, rt: RefType) -> Type:
        return RefType(self.visit(rt.value))

    def visit_type_relation(self, tr: TypeRelation) -> Type:
        return TypeRelation(tr.func, [self.visit(a) for a in tr.args], tr.num_inputs, tr.attrs)

    def visit_type_data(self, td: TypeData) -> TypeData:
        return TypeData(
            self.visit(td.header), [self.visit(tv) for tv in td.type_vars], td.constructors
        )
