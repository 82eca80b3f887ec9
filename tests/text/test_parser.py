import numpy as np
import pytest

from relaykit.errors import ParseError, RelayTypeError
from relaykit.ir import (
    Call,
    Constant,
    Function,
    FuncType,
    If,
    IncompleteType,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
)
from relaykit.text import astext, parse, parse_expr


@pytest.fixture
def P(ops):
    """parse_expr / parse against the test operators."""

    class _P:
        @staticmethod
        def expr(text, **kw):
            return parse_expr(text, registry=ops.reg, **kw)

        @staticmethod
        def mod(text, **kw):
            return parse(text, registry=ops.reg, **kw)

    return _P


def _err(fn, text):
    with pytest.raises(ParseError) as info:
        fn(text)
    return info.value


# -- grammar ------------------------------------------------------------------------------


@pytest.mark.parametrize("header", ['#[version = "0.0.5"]\n', "v0.0.4\n", ""])
def test_headers_are_optional_and_old_ones_accepted(P, header):
    mod = P.mod(header + "def @main(%x: Tensor[(2,), float32]) { nn.relu(%x) }")
    assert mod["main"].params[0].type_annotation == TensorType((2,))


def test_types(P):
    text = (
        "fn (%a: Tensor[(1, 3), float32], %b: Tensor[(64,), int8], %c: Tensor[(), bool], "
        "%d: int64, %e: (float32, Tensor[(2), float16]), %f: (float32,), %g: (), "
        "%h: fn (float32, int32) -> (float32), %i: ?) -> float64 { %a }"
    )
    fn = P.expr(text)
    assert [p.type_annotation for p in fn.params] == [
        TensorType((1, 3)),
        TensorType((64,), "int8"),
        TensorType((), "bool"),
        TensorType((), "int64"),
        TupleType([TensorType(()), TensorType((2,), "float16")]),
        TupleType([TensorType(())]),
        TupleType([]),
        FuncType([TensorType(()), TensorType((), "int32")], TensorType(())),
        IncompleteType(),
    ]
    assert fn.ret_type == TensorType((), "float64")


@pytest.mark.parametrize(
    "literal,dtype,value",
    [
        ("1f", "float32", 1.0),
        ("-127f", "float32", -127.0),
        ("1e-05f", "float32", 1e-05),
        ("0.5", "float32", 0.5),
        ("2f64", "float64", 2.0),
        ("1.5f16", "float16", 1.5),
        ("64", "int32", 64),
        ("16i64", "int64", 16),
        ("-3i8", "int8", -3),
        ("7u8", "uint8", 7),
        ("True", "bool", True),
        ("False", "bool", False),
        ("3f32", "float32", 3.0),
    ],
)
def test_scalar_literals(P, literal, dtype, value):
    c = P.expr(literal)
    assert isinstance(c, Constant)
    arr = c.data.numpy()
    assert arr.shape == () and arr.dtype == np.dtype(dtype) and arr == np.array(value, dtype)


def test_attrs_of_every_kind_override_defaults(P):
    call = P.expr(
        "free_var %x: Tensor[(2), float32];\n"
        'my.attrs(%x, flag=True, names=["a", "b\\"c"], table=[[0, 0], (0, 1)], scale=2)'
    )
    assert dict(call.attrs) == {
        "flag": True,
        "names": ("a", 'b"c'),
        "table": ((0, 0), (0, 1)),
        "scale": 2.0,
    }
    assert isinstance(call.attrs["scale"], float)  # the schema default is a float
    clip = P.expr("free_var %x: Tensor[(2), float32];\nclip(%x, a_min=-inff, a_max=1e-05f)")
    assert clip.attrs["a_min"] == float("-inf") and clip.attrs["a_max"] == 1e-05
    dense = P.expr('free_var %x: float32;\nnn.dense(%x, %x, units=None, out_dtype="int8")')
    assert dict(dense.attrs) == {"units": None, "out_dtype": "int8"}


def test_bindings_lets_ifs_and_closures(P):
    fn = P.expr(
        """fn (%c: bool, %x: Tensor[(2), float32]) {
          %0 = negative(%x);   // a comment
          /* a block
             comment */
          let %y: Tensor[(2), float32] = add(%0, %0);
          %1 = fn (%a, Composite="x.y", Primitive=1) -> Tensor[(2), float32] { nn.relu(%a) };
          if (%c) { %1(%y) } else { let %z = (%y, %0); %z.1 }
        }"""
    )
    assert isinstance(fn, Function) and [p.name_hint for p in fn.params] == ["c", "x"]
    let = fn.body
    assert isinstance(let, Let) and let.var.name_hint == "y"
    assert let.value.op.name == "add" and let.value.args[0] is let.value.args[1]
    ite = let.body
    assert isinstance(ite, If) and ite.cond is fn.params[0]
    closure_call = ite.true_branch
    assert isinstance(closure_call, Call) and isinstance(closure_call.op, Function)
    assert dict(closure_call.op.attrs) == {"Composite": "x.y", "Primitive": 1}
    assert closure_call.args[0] is let.var
    inner_let = ite.false_branch
    assert isinstance(inner_let.value, Tuple) and isinstance(inner_let.body, TupleGetItem)
    assert inner_let.body.index == 1 and inner_let.body.tuple_value is inner_let.var


def test_projections_parenthesised_and_chained(P):
    e = P.expr("free_var %t: ((float32, float32), float32);\n%0 = (%t).0;\n%0.1")
    assert isinstance(e, TupleGetItem) and e.index == 1 and e.tuple_value.index == 0
    chained = P.expr("free_var %t: ((float32, float32), float32);\n%0 = (%t, %t);\n%0.0.1")
    assert chained.index == 1 and chained.tuple_value.index == 0
    # TVM prints projections of variables as %t.0: read as such when no %t.0 is defined
    tvm_style = P.expr("free_var %t: ((float32, float32), float32);\n%t.0.1")
    assert tvm_style.index == 1 and tvm_style.tuple_value.tuple_value.name_hint == "t"
    named = P.expr("free_var %t.0: float32;\n%t.0")
    assert isinstance(named, Var) and named.name_hint == "t.0"


def test_module_with_globals_and_forward_references(P):
    mod = P.mod(
        """#[version = "0.0.5"]
        def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
          @helper(%x)
        }
        def @helper(%y: Tensor[(2), float32], global_symbol="helper") {
          nn.relu(%y)
        }"""
    )
    gv = mod.get_global_var("helper")
    assert mod["main"].body.op is gv
    assert dict(mod["helper"].attrs) == {"global_symbol": "helper"}
    # parse() type-checks, as TVM's parser does
    assert mod["main"].body.checked_type == TensorType((2,))
    assert mod["helper"].ret_type == TensorType((2,))


def test_lone_expression_becomes_main(P):
    mod = P.mod("free_var %x: Tensor[(3), float32];\nnn.relu(%x)")
    assert [p.name_hint for p in mod["main"].params] == ["x"]


def test_meta_constants_shared_by_index(P):
    c = Constant(np.arange(6, dtype="float32").reshape(2, 3))
    x = Var("x", TensorType((2, 3)))
    text = astext(Function([x], Tuple([Call(P_op(P, "add"), [x, c]), c])))
    fn = P.expr(text)
    add, second = fn.body.fields[0].args[1], fn.body.fields[1]
    assert add is second
    np.testing.assert_array_equal(add.data.numpy(), c.data.numpy())


def P_op(P, name):
    return P.expr(f"free_var %x: float32;\n{name}(%x, %x)").op


def test_spans_point_into_the_source(P):
    fn = P.expr(
        "fn (%x: float32) {\n  %0 = negative(%x);\n  add(%0, %x)\n}",
    )
    assert (fn.body.span.line, fn.body.span.column) == (3, 3)
    assert (fn.body.args[0].span.line, fn.body.args[0].span.column) == (2, 8)
    assert fn.params[0].span.column == 5


def test_type_errors_point_at_the_parsed_source(P):
    text = "def @main(%x: Tensor[(2), float32]) {\n  %0 = nn.relu(%x);\n  nn.dense(%0, %x)\n}"
    with pytest.raises(RelayTypeError) as info:
        parse(text, source_name="model.relay")  # the real operators
    message = str(info.value)
    assert "nn.dense" in message and "at model.relay:3:3" in message
    assert "nn.dense(%0, %x, units=None)  /* <-- here */" in message
    untyped = P.mod("def @main(%x: float32) -> Tensor[(3), float32] { %x }", infer_types=False)
    assert untyped["main"].ret_type == TensorType((3,))


def test_real_operators_and_tvm_printed_text():
    """What TVM prints (doubled ty comments and all) parses with the real operators."""
    text = """#[version = "0.0.5"]
def @main(%input_1: Tensor[(1, 4, 4, 3), float32] /* ty=Tensor[(1, 4, 4, 3), float32] */) {
  %69 = nn.pad(%input_1, 0f, pad_width=[[0, 0], [0, 1], [0, 1], [0, 0]]) /* ty=Tensor[(1, 5, 5, 3), float32] */;
  %70 = multiply(%69, 16f /* ty=float32 */) /* ty=Tensor[(1, 5, 5, 3), float32] */;
  %71 = round(%70) /* ty=Tensor[(1, 5, 5, 3), float32] */;
  %72 = clip(%71, a_min=-127f, a_max=127f) /* ty=Tensor[(1, 5, 5, 3), float32] */;
  %73 = cast(%72, dtype="int8") /* ty=Tensor[(1, 5, 5, 3), int8] */;
  %74 = cast(%73, dtype="int32");
  %75 = add(%74, 64 /* ty=int32 */) /* ty=Tensor[(1, 5, 5, 3), int32] */;
  right_shift(%75, 7 /* ty=int32 */ /* ty=int32 */)
}"""  # noqa: E501
    mod = parse(text)
    assert mod["main"].checked_type.ret_type == TensorType((1, 5, 5, 3), "int32")
    clip = mod["main"].body.args[0].args[0].args[0].args[0]
    assert clip.op.name == "clip" and clip.attrs["a_min"] == -127.0


# -- errors ---------------------------------------------------------------------------------


def _check(err, line, col, *needles):
    assert (err.line, err.column) == (line, col), str(err)
    text = str(err)
    assert text.startswith(f"<string>:{line}:{col}: error: "), text
    for needle in needles:
        assert needle in text, text
    _src_line, caret = text.splitlines()[1:3]
    assert caret.index("^") == col + 1  # two spaces of indent, 1-based column


def test_error_expected_token(P):
    err = _err(P.mod, "def @main(%x: float32) {\n  %0 = add(%x, %x;\n  %0\n}")
    _check(err, 2, 18, "expected ',' or ')' in the arguments but found ';'")


def test_error_unknown_operator_suggests(P):
    err = _err(P.expr, "free_var %x: float32;\nnn.rel(%x)")
    _check(err, 2, 1, "unknown operator", "nn.relu")
    assert str(err).splitlines()[2] == "  ^^^^^^"


def test_error_undefined_names(P):
    _check(_err(P.expr, "add(%y, %y)"), 1, 5, "undefined variable %y", "free_var %y")
    _check(_err(P.expr, "fn (%x: float32) {\n  add(%x, %3)\n}"), 2, 11, "undefined temporary %3")
    err = _err(P.mod, "def @main(%x: float32) { @helpr(%x) }\ndef @helper(%x: float32) { %x }")
    _check(err, 1, 26, "undefined global @helpr", "did you mean @helper")
    err = _err(P.expr, "fn (%t: (float32, float32)) { %u.1 }")
    _check(err, 1, 31, "undefined variable %u.1")


def test_error_bad_types(P):
    _check(_err(P.expr, "fn (%x: Tensor[(2), floa32]) { %x }"), 1, 21, "expected a dtype")
    _check(_err(P.expr, "fn (%x: Tensor[(2.5, 2), float32]) { %x }"), 1, 17, "expected a dimension")
    _check(_err(P.expr, "fn (%x: Tnsor[(2), float32]) { %x }"), 1, 9, "expected a type")


def test_error_arity_and_attributes(P):
    _check(_err(P.expr, "free_var %x: float32;\nadd(%x)"), 2, 1, "add takes 2 inputs, got 1")
    err = _err(P.expr, "free_var %x: float32;\nnn.softmax(%x, axes=1)")
    _check(err, 2, 16, "nn.softmax has no attribute 'axes'", "axis")
    err = _err(P.expr, "free_var %x: float32;\nnn.softmax(axis=1, %x)")
    _check(err, 2, 20, "positional arguments must come before keyword attributes")


def test_error_metadata(P):
    err = _err(P.expr, "free_var %x: float32;\nadd(%x, meta[relay.Constant][0])")
    _check(err, 2, 30, "no #[metadata] section")
    good = astext(Constant(np.ones((2,), "float32")))
    err = _err(P.expr, good.replace("[0]", "[4]"))
    assert "does not exist: the metadata section holds 1 constants" in str(err)
    err = _err(P.expr, good.replace('"data": "', '"data": "!'))
    assert "bad metadata section" in str(err) and "base64" in str(err)


def test_error_lexical(P):
    _check(_err(P.expr, "add(%x, /* oops"), 1, 9, "comment is not closed")
    _check(_err(P.expr, 'cast(%x, dtype="int8)'), 1, 16, "string literal is not closed")
    _check(_err(P.expr, "add(1q, 2)"), 1, 5, "malformed number '1q'")
    _check(_err(P.expr, "add(1, 2) $"), 1, 11, "unexpected character '$'")


def test_error_redefinition_and_trailing_text(P):
    err = _err(P.expr, "fn (%x: float32) {\n  %0 = negative(%x);\n  %0 = negative(%0);\n  %0\n}")
    _check(err, 3, 3, "%0 is already defined")
    _check(_err(P.expr, "negative(1f) negative"), 1, 14, "expected the end of the expression")
    err = _err(P.mod, "def @main() { 1f }\ndef @main() { 2f }")
    _check(err, 2, 5, "@main is defined twice")


def test_operator_as_value(P):
    # As in TVM, an operator name is an expression (an Op) also when not called.
    e = P.expr("free_var %x: float32;\n%0 = nn.relu;\n%0(%x)")
    assert isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "nn.relu"


def test_deep_nesting_is_a_parse_error_not_a_crash(P):
    text = "negative(" * 5000 + "1f" + ")" * 5000
    err = _err(P.expr, text)
    assert "nested too deeply" in str(err)
