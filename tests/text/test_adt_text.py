"""The ADT part of the text format: type definitions, type parameters, constructors,
match; round trips of the Prelude and the standard library files."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ParseError
from relaykit.ir.adt import Match, PatternConstructor, PatternVar

LIST = """
type List[A] {
  Cons(A, List[A]),
  Nil,
}
"""


def test_type_definition_and_constructor_expression():
    mod = tvm.parser.parse(LIST + "def @single(%x: int32) -> List[int32] { Cons(%x, Nil) }")
    _, cons, nil = mod.get_type("List")
    assert [c.name_hint for c in (cons, nil)] == ["Cons", "Nil"]
    body = mod["single"].body
    assert body.op is cons and body.args[1].op is nil  # a bare nullary constructor is Nil()
    assert str(mod["single"].checked_type) == "fn (int32) -> List[int32]"


def test_match_with_type_parameters_evaluates():
    mod = tvm.parser.parse(
        LIST
        + """
def @length[A](%xs: List[A]) -> int32 {
  match (%xs) {
    Cons(_, %rest: List[A]) => 1 + @length(%rest),
    Nil => 0,
  }
}
def @main(%x: float32) -> int32 {
  @length(Cons(%x, Cons(%x, Nil)))
}
"""
    )
    fn = mod["length"]
    assert len(fn.type_params) == 1 and isinstance(fn.body, Match)
    assert isinstance(fn.body.clauses[0].lhs, PatternConstructor)
    out = relay.create_executor(mod=mod).evaluate()(np.float32(1.0))
    assert int(out.numpy()) == 2


def test_incomplete_match_and_tuple_patterns():
    mod = tvm.parser.parse(
        LIST
        + """
def @first[A](%p: (List[A], A)) -> A {
  match? (%p) {
    (Cons(%h, _), _) => %h,
  }
}
"""
    )
    match = mod["first"].body
    assert not match.complete
    assert isinstance(match.clauses[0].lhs.patterns[0].patterns[0], PatternVar)


def test_prelude_prints_and_parses_back():
    mod = relay.transform.InferType()(relay.prelude.Prelude().mod)
    back = tvm.parser.parse(mod.astext())
    tvm.ir.assert_structural_equal(back, mod, map_free_vars=True)


def test_standard_library_files_load_and_run():
    mod = tvm.IRModule()
    p = relay.prelude.Prelude(mod)
    mod.import_from_std("nat.rly")
    mod.import_from_std("nat.rly")  # the second import adds nothing
    assert [c.name_hint for c in mod.get_type("nat")[1:]] == ["zero", "succ"]
    two = relay.testing.make_nat_expr(p, 2)
    three = relay.testing.make_nat_expr(p, 3)
    mod["main"] = relay.Function([], mod.get_global_var("nat_add")(two, three))
    value = relay.create_executor(mod=mod).evaluate()()
    assert relay.testing.count(p, value) == 5
    mod.import_from_std("gradient.rly")
    assert [c.name_hint for c in mod.get_type("GradCell")[1:]] == ["Raw", "One", "Zero"]


def test_constructor_tags_depend_on_the_type_name_only():
    a, b = relay.prelude.Prelude().mod, relay.prelude.Prelude().mod
    assert [c.tag for c in a.get_type("List")[1:]] == [c.tag for c in b.get_type("List")[1:]]
    cons, nil = a.get_type("List")[1:]
    assert nil.tag == cons.tag + 1 and cons.tag != 0


def test_duplicate_constructor_is_a_parse_error_with_position():
    with pytest.raises(
        ParseError, match=r"<string>:3:10: error: constructor Lmao is defined twice"
    ):
        tvm.parser.parse("type Ayy { Lmao }\n\ntype B { Lmao }")


def test_polymorphic_function_types_print_their_parameters_and_parse_back():
    a = relay.TypeVar("a")
    f = relay.var("f", relay.FuncType([a], a, [a]))
    text = relay.Function([f], f).astext()
    assert "%f: fn [a](a) -> a" in text
    back = relay.parse_expr(text).params[0].type_annotation
    assert back == f.type_annotation and back.type_params[0] is not a
    with pytest.raises(ParseError, match="type parameters need the module parser"):
        from relaykit.text.reader import TokenReader
        from relaykit.text.tokenizer import Source

        TokenReader(Source("fn [a](a) -> a")).parse_type()
