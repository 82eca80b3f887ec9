"""Kind checking, match coverage (unmatched_cases) and type equality up to renaming."""

from __future__ import annotations

import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import RelayTypeError
from relaykit.ir import (
    FuncType,
    GlobalTypeVar,
    RefType,
    TensorType,
    TupleType,
    TypeKind,
    TypeRelation,
    TypeVar,
    check_kind,
)
from relaykit.ir.adt import (
    Clause,
    Constructor,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    TypeCall,
    TypeData,
)
from relaykit.ir.match_coverage import unmatched_cases

T = TensorType((2,), "float32")


def test_kinds_of_well_formed_types():
    a = TypeVar("a")
    assert check_kind(FuncType([a, T], RefType(TupleType([a])), [a])) is TypeKind.Type
    assert check_kind(TypeRelation(None, [a, T], 1)) is TypeKind.Constraint
    assert check_kind(TypeVar("n", TypeKind.ShapeVar)) is TypeKind.ShapeVar
    box = GlobalTypeVar("Box")
    mod = tvm.IRModule()
    mod[box] = TypeData(box, [a], [])
    assert check_kind(TypeCall(box, [T]), mod) is TypeKind.Type


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (RefType(TypeVar("n", TypeKind.ShapeVar)), "the value of ref\\(n\\) has kind ShapeVar"),
        (FuncType([], T, [], [T]), "constraint .* has kind Type, but a constraint must"),
        (TypeCall(GlobalTypeVar("t", TypeKind.Type), []), "is not an ADT handle"),
        (TypeCall(GlobalTypeVar("Unknown"), []), "not defined in the module"),
    ],
)
def test_kind_errors_name_the_part(bad, message):
    with pytest.raises(RelayTypeError, match=message):
        check_kind(bad)


def test_type_call_arity_is_checked():
    box, a = GlobalTypeVar("Box"), TypeVar("a")
    mod = tvm.IRModule()
    mod[box] = TypeData(box, [a], [])
    with pytest.raises(RelayTypeError, match="Box takes 1 type argument"):
        check_kind(TypeCall(box, []), mod)


def test_function_types_are_equal_up_to_renaming():
    a, b = TypeVar("a"), TypeVar("b")
    assert FuncType([a], a, [a]) == FuncType([b], b, [b])
    assert hash(FuncType([a], a, [a])) == hash(FuncType([b], b, [b]))
    assert FuncType([a], a, [a]) != FuncType([b], a, [b])  # a is free on the right
    assert TypeVar("a") != TypeVar("a")  # each variable is itself


def _list_module():
    mod = tvm.IRModule()
    relay.prelude.Prelude(mod)
    return mod, *mod.get_type("List")[1:]


def test_missing_cases_are_reported_as_patterns():
    mod, cons, nil = _list_module()
    v = relay.var("v")
    two_or_more = PatternConstructor(
        cons, [PatternWildcard(), PatternConstructor(cons, [PatternWildcard(), PatternWildcard()])]
    )
    match = Match(v, [Clause(two_or_more, v)])
    missing = unmatched_cases(match, mod)
    shapes = sorted(
        (p.constructor.name_hint, tuple(getattr(q, "constructor", None) is nil for q in p.patterns))
        for p in missing
    )
    assert shapes == [("Cons", (False, True)), ("Nil", ())]
    complete = Match(v, [Clause(two_or_more, v), Clause(PatternVar(relay.var("w")), v)])
    assert unmatched_cases(complete, mod) == []


def test_tuple_patterns_split_field_by_field():
    mod, cons, nil = _list_module()
    v = relay.var("v")
    nil_p = PatternConstructor(nil, [])
    match = Match(v, [Clause(PatternTuple([nil_p, PatternWildcard()]), v)])
    (left,) = unmatched_cases(match, mod)
    assert isinstance(left, PatternTuple)
    assert left.patterns[0].constructor is cons


def test_constructor_of_an_unknown_type_needs_the_module():
    box = GlobalTypeVar("Box")
    con = Constructor("box", [], box)
    match = Match(relay.var("v"), [Clause(PatternConstructor(con, []), relay.var("v"))])
    with pytest.raises(tvm.error.TVMError, match="pass the module"):
        unmatched_cases(match)
