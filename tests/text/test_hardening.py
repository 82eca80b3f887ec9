"""Hostile Relay text: each input the parser fuzzer once crashed on (an untyped
exception) now raises a relaykit error that says what and where, before any large
allocation. The real operators are used, with type inference, as ``parse`` does."""

import json

import pytest

from relaykit.errors import ParseError, RelayTypeError
from relaykit.text import parse, parse_expr

X = "def @main(%x: Tensor[(2, 3), float32]) {\n  "


def _meta(entry):
    return "def @main() {\n  meta[relay.Constant][0]\n}\n#[metadata]\n" + json.dumps(
        {"relay.Constant": [entry]}
    )


def _parse_error(text):
    with pytest.raises(ParseError) as info:
        parse(text)
    return info.value


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"shape": [1], "dtype": ["float32"], "data": "AAAAAA=="}, "unknown dtype ['float32']"),
        ({"shape": [1], "dtype": None, "data": "AAAAAA=="}, "unknown dtype None"),
        ({"shape": [0, 10**30], "dtype": "float32", "data": ""}, "is too large"),
        ({"shape": [0, 2**62, 2**62], "dtype": "int8", "data": ""}, "too large for an array"),
        ({"shape": [0] * 40, "dtype": "float32", "data": ""}, "at most 32 dimensions"),
    ],
)
def test_metadata_absurd_entries(entry, message):
    err = _parse_error(_meta(entry))
    assert message in err.message
    assert (err.line, err.column) == (4, 12)  # the end of '#[metadata]'


@pytest.mark.parametrize("digits", [41, 5000])
def test_metadata_integer_with_thousands_of_digits(digits):
    """Python's int() refuses 4,300+ digits with a ValueError: a typed error here, at
    the number."""
    text = _meta({"shape": [1], "dtype": "int8", "data": "AA=="}).replace(
        '"shape": [1]', '"shape": [' + "9" * digits + "]"
    )
    err = _parse_error(text)
    assert f"bad metadata section: an integer of {digits} digits (at most 40" in err.message
    line = text.splitlines()[4]
    assert (err.line, err.column) == (5, line.index("999") + 1)
    assert isinstance(err, ParseError)


def test_metadata_that_is_not_json_says_where():
    err = _parse_error(_meta({"shape": [1]}).replace('"shape": [1]', '"shape": [1,'))
    assert "bad metadata section: metadata is not valid JSON" in err.message
    assert err.line == 5


def test_metadata_zero_size_constant_still_loads():
    mod = parse(_meta({"shape": [0, 5], "dtype": "float32", "data": ""}))
    assert mod["main"].body.data.numpy().shape == (0, 5)


def test_dimension_beyond_int64():
    err = _parse_error("def @main(%x: Tensor[(2, 9223372036854775808), float32]) { %x }")
    assert "dimension 9223372036854775808 does not fit in int64" in err.message
    assert (err.line, err.column) == (1, 26)
    # the largest int64 is a valid (type-level) dimension: no allocation happens
    big = parse("def @main(%x: Tensor[(9223372036854775807), int8]) { %x }")
    assert big["main"].params[0].type_annotation.shape == (2**63 - 1,)


def test_integer_literal_with_thousands_of_digits():
    err = _parse_error("def @main() {\n  1" + "0" * 5000 + "i64\n}")
    assert "integer literal of 5001 digits is too long" in err.message
    assert (err.line, err.column) == (2, 3)
    err = _parse_error(X + "%x.1" + "0" * 5000 + "\n}")
    assert "too long" in err.message


@pytest.mark.parametrize("literal", ['"\\xzz"', '"\\x4"', '"\\x"'])
def test_bad_hex_escape(literal):
    err = _parse_error(X + f"nn.softmax(%x, axis={literal})\n}}")
    assert "bad escape \\x" in err.message
    assert err.line == 2


@pytest.mark.parametrize(
    ("value", "shown"), [("[1]", "(1,)"), ("True", "True"), ('"0.5"', "'0.5'"), ("None", "None")]
)
def test_attribute_of_the_wrong_kind_is_a_parse_error(value, shown):
    err = _parse_error(X + f"nn.dropout(%x, rate={value})\n}}")
    assert err.message == f"attribute rate of nn.dropout must be a number, got {shown}"
    assert (err.line, err.column) == (2, 18)


def test_string_attribute_of_the_wrong_kind():
    err = _parse_error(X + "cast(%x, dtype=3)\n}")
    assert "attribute dtype of cast must be a string, got 3" in err.message


@pytest.mark.parametrize(
    "call",
    [
        "strided_slice(%x, begin=1, end=[2], strides=[1])",
        'strided_slice(%x, begin=["a"], end=[2], strides=[1])',
        "reshape(%x, newshape=None)",
        'reshape(%x, newshape=["a", 2])',
        "sum(%x, axis=[[1]])",
        "clip(%x, a_min=[1], a_max=2f)",
        'clip(%x, a_min="0", a_max=2f)',
    ],
)
def test_attributes_a_type_relation_cannot_use_are_type_errors(call):
    """A relation that cannot read its attributes reports a RelayTypeError at the call."""
    with pytest.raises(RelayTypeError) as info:
        parse(X + call + "\n}")
    message = str(info.value)
    op = call.split("(")[0]
    assert f"type error in {op}(Tensor[(2, 3), float32])" in message
    assert "at <string>:2:3" in message


def test_expand_dims_rank_is_bounded_before_building_the_shape():
    with pytest.raises(RelayTypeError, match="gives a rank above 32"):
        parse(X + "expand_dims(%x, axis=0, num_newaxis=1000000000000)\n}")


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("fn (%x: " + "(" * 150 + "float32" + ",)" * 150 + ") { %x }", "types nested"),
        ("fn (%x: float32) { nn.softmax(%x, axis=" + "[" * 150 + "1" + "]" * 150 + ") }", "attr"),
    ],
)
def test_nesting_limits_of_types_and_attributes(text, what):
    with pytest.raises(ParseError, match="nested more than 100 levels deep") as info:
        parse_expr(text)
    assert info.value.line == 1
    assert what.split()[0] in info.value.message


def test_moderately_nested_types_still_parse():
    text = "fn (%x: " + "(" * 20 + "float32" + ",)" * 20 + ") { %x }"
    ty = parse_expr(text).params[0].type_annotation
    for _ in range(20):
        assert len(ty.fields) == 1
        ty = ty.fields[0]
    assert str(ty) == "float32"


@pytest.mark.parametrize("depth", [3000, 30000])
@pytest.mark.parametrize(
    "wrap",
    [
        lambda d: "(" * d + "%x" + ")" * d,
        lambda d: "if (True) {" * d + "%x" + "} else { %x }" * d,
        lambda d: "(let %q = " * d + "%x" + "; %q)" * d,
    ],
    ids=["parens", "ifs", "lets"],
)
def test_deep_expressions_are_parse_errors(wrap, depth):
    with pytest.raises(ParseError, match="nested too deeply"):
        parse("free_var %x: float32;\n" + wrap(depth))


def test_long_let_chain_without_nesting_parses():
    """Flat lets are not nesting: thousands of them parse (and type-check) fine."""
    n = 3000
    lines = ["fn (%x: Tensor[(2), float32]) {", "  let %v0 = add(%x, %x);"]
    lines += [f"  let %v{i} = add(%v{i - 1}, %x);" for i in range(1, n)]
    lines += [f"  %v{n - 1}", "}"]
    mod = parse("\n".join(lines))
    assert str(mod["main"].checked_type.ret_type) == "Tensor[(2), float32]"
