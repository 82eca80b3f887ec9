"""Relay text forms that TVM's parser and printer have: infix operators, unary minus,
sequencing, nested comments, literal typing rules, operators and globals as values,
``parse(text, name, init_module, init_meta_table)``, and TVM's printing details."""

import random

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import ArgumentError, DiagnosticError, ParseError
from relaykit.ir import Call, Constant, Function, GlobalVar, IRModule, Let, Op, Tuple, Var
from relaykit.ir.attrs import Attrs
from relaykit.ir.structural import structural_equal
from relaykit.text import astext, parse, parse_expr


def _value(expr):
    return relay.create_executor().evaluate(expr).numpy()


# -- infix operators ---------------------------------------------------------------
@pytest.mark.parametrize("seed", range(20))
def test_arithmetic_matches_python_precedence(seed):
    """Random flat chains of * / + - over float64 literals evaluate as Python does
    (the same precedence and left associativity)."""
    rng = random.Random(seed)
    n = rng.randint(2, 7)
    nums = [rng.randint(1, 9) for _ in range(n)]
    ops = [rng.choice("*/+-") for _ in range(n - 1)]
    text = "".join(f"{a}f64 {op} " for a, op in zip(nums, ops, strict=False)) + f"{nums[-1]}f64"
    python_text = "".join(f"{a}.0 {op} " for a, op in zip(nums, ops, strict=False))
    expected = eval(python_text + f"{nums[-1]}.0")
    np.testing.assert_allclose(_value(parse_expr(text)), expected, rtol=1e-12)


def test_parentheses_override_precedence():
    assert float(_value(parse_expr("2f * (3f + 4f)"))) == 14.0
    assert float(_value(parse_expr("(2f * 3f) + 4f"))) == 10.0
    assert float(_value(parse_expr("8f - 2f - 1f"))) == 5.0  # left-associative


def test_comparison_levels():
    c = [relay.const(i) for i in range(5)]
    # `==` binds loosest, then `<`, then `+`, then `*`.
    expected = relay.equal(c[0], relay.less(c[1], relay.add(c[2], relay.multiply(c[3], c[4]))))
    assert structural_equal(parse_expr("0 == 1 < 2 + 3 * 4"), expected)
    for text, op in [
        ("<=", "less_equal"),
        (">=", "greater_equal"),
        ("!=", "not_equal"),
        (">", "greater"),
        ("/", "divide"),
        ("-", "subtract"),
    ]:
        e = parse_expr(f"1 {text} 2")
        assert isinstance(e, Call) and e.op.name == op
        assert [int(a.data.numpy()) for a in e.args] == [1, 2]


def test_minus_without_spaces_is_subtraction():
    e = parse_expr("5 -2")
    assert e.op.name == "subtract" and int(_value(e)) == 3


def test_unary_minus():
    assert int(parse_expr("--10").data.numpy()) == 10
    assert int(parse_expr("---10").data.numpy()) == -10
    e = parse_expr("free_var %x: float32; -%x")
    assert isinstance(e, Call) and e.op.name == "negative"


# -- other forms -------------------------------------------------------------------
def test_nested_block_comments():
    text = "/* outer /* inner */ still outer */ ()"
    e = parse_expr(text)
    assert isinstance(e, Tuple) and not e.fields


def test_sequencing_binds_a_wildcard():
    e = parse_expr("(); 1")
    assert isinstance(e, Let) and e.var.name_hint == "_"
    assert isinstance(e.value, Tuple) and int(e.body.data.numpy()) == 1


def test_operator_and_global_values():
    assert isinstance(parse_expr("nn.relu"), Op)
    g = parse_expr("@f")
    assert isinstance(g, GlobalVar) and g.name_hint == "f"
    with pytest.raises(ParseError, match="undefined global @f"):
        parse("@f")  # a module still needs its globals defined


def test_underscore_annotation_is_no_annotation():
    e = parse_expr("let %x: _ = 1; %x")
    assert e.var.type_annotation is None


# -- literals ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value", "dtype"),
    [
        ("2147483647", 2**31 - 1, "int32"),
        ("2147483648", 2**31, "int64"),
        ("-2147483649", -(2**31) - 1, "int64"),
        ("9223372036854775807", 2**63 - 1, "int64"),
        ("-42i", -42, "int32"),
        ("65504f16", 65504.0, "float16"),
    ],
)
def test_literal_types(text, value, dtype):
    c = parse_expr(text)
    assert isinstance(c, Constant)
    assert str(c.data.dtype) == dtype and c.data.numpy().item() == value


@pytest.mark.parametrize("text", ["2147483648i32", "32768i16", "65505f16", "3.40283e+38f32"])
def test_unrepresentable_literals(text):
    with pytest.raises(DiagnosticError, match="does not fit"):
        parse_expr(text)


def test_float32_max_roundtrips():
    big = relay.const(np.finfo(np.float32).max, "float32")
    back = parse_expr(astext(big))
    assert back.data.numpy().tobytes() == big.data.numpy().tobytes()


# -- parse(text, source_name, init_module, init_meta_table) --------------------------
def test_parse_with_init_module_and_meta_table():
    init = parse('#[version = "0.0.5"]\ndef @f(%y: Tensor[(2), float32]) { negative(%y) }')
    data = np.array([1.5, -2.0], "float32")
    mod = parse(
        "def @main(%x: Tensor[(2), float32]) { add(@f(%x), meta[relay.Constant][0]) }",
        "from_string",
        init,
        {"relay.Constant": [relay.const(data)]},
    )
    assert isinstance(mod, IRModule)
    assert sorted(gv.name_hint for gv in mod.get_global_vars()) == ["f", "main"]
    x = np.array([3.0, 4.0], "float32")
    out = relay.create_executor(mod=mod).evaluate()(x).numpy()
    np.testing.assert_allclose(out, -x + data)


def test_parse_meta_table_must_hold_constants():
    with pytest.raises(ParseError, match="must be a Constant"):
        parse("def @main() { meta[relay.Constant][0] }", "s", None, {"relay.Constant": [1]})


# -- printing ----------------------------------------------------------------------
def test_call_arguments_print_before_callee():
    x, y = Var("x"), Var("y")
    prog = Call(Function([x], x), [Call(Function([y], y), [relay.const(1)])])
    lines = astext(prog).splitlines()
    assert lines[1] == "%0 = fn (%y) {"
    assert lines[-1] == "%2(%1)"
    assert structural_equal(parse_expr(astext(prog)), prog, map_free_vars=True)


def test_lone_constant_prints_without_type():
    assert astext(relay.const(42, "int16")).splitlines()[-1] == "42i16"


def test_slash_in_variable_names_roundtrips():
    a, b = Var("base/x"), Var("base/y")
    text = astext(relay.add(a, b))
    assert "%base/x" in text and "%base/y" in text
    back = parse_expr(text)
    assert [v.name_hint for v in back.args] == ["base/x", "base/y"]


def test_non_op_call_attrs_type_key_roundtrips():
    x = Var("x")
    call = Call(Function([x], x), [relay.const(1)], Attrs({"name": "n"}, "attrs.TestAttrs"))
    text = astext(call)
    assert 'attrs_type_key="attrs.TestAttrs"' in text
    back = parse_expr(text)
    assert back.attrs.type_key == "attrs.TestAttrs" and dict(back.attrs) == {"name": "n"}


# -- AnnotateSpans -------------------------------------------------------------------
def test_annotate_spans_points_into_the_printed_text():
    x = relay.var("x", shape=(3, 4), dtype="float32")
    y = relay.clip(relay.negative(x), -np.inf, np.inf)
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function([x], y)))
    out = relay.transform.AnnotateSpans()(mod)
    assert structural_equal(out, mod)
    lines = astext(out).splitlines()
    body = out["main"].body
    for node, word in [(body, "clip"), (body.args[0], "negative")]:
        span = node.span
        assert span.source_name == "GeneratedSource"
        assert lines[span.line - 1][span.column - 1 :].lstrip("%0123456789 =").startswith(word)
    assert out["main"].body.checked_type == mod["main"].body.checked_type


# -- spans -------------------------------------------------------------------------
def test_spans_set_outside_the_parser_are_printed():
    x = relay.var("x", shape=(2,))
    call = relay.add(x, x)
    named = Call(
        call.op, call.args, call.attrs, None, relay.Span(relay.SourceName("Add0"), 3, 3, 7, 7)
    )
    text = astext(named)
    assert "span=Add0:3:7" in text
    back = parse_expr(text, "parsed")
    assert structural_equal(back, named, map_free_vars=True)
    # Spans the parser sets point into the text itself and are not printed back.
    assert back.span.source_name == "parsed" and "span=" not in astext(back)


def test_source_name():
    assert str(relay.SourceName("a.py")) == "a.py"
    assert relay.SourceName("a") == relay.SourceName("a")
    with pytest.raises(ArgumentError, match="SourceName takes a str"):
        relay.SourceName(3)


def test_too_deeply_nested_comment_says_so():
    text = "/* " * 9 + "x" + " */" * 9 + " ()"
    with pytest.raises(ParseError, match="nest at most 8 levels"):
        parse_expr(text)
    with pytest.raises(ParseError, match="not closed"):
        parse_expr("/* /* */ ()")
