import numpy as np
import pytest

from relaykit.ir import (
    Constant,
    Function,
    FuncType,
    GlobalVar,
    If,
    IncompleteType,
    IRModule,
    Let,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
)
from relaykit.ir.expr import Call
from relaykit.text import context_lines

T = TensorType((10, 1))


def _module(**funcs):
    """A module without type checking (the printer must not need types)."""
    mod = IRModule()
    for name, fn in funcs.items():
        mod._add(name, fn)
    return mod


# -- the tutorial (seed 002) --------------------------------------------------------


def test_tutorial_free_var_expression(call):
    x = Var("x", T)
    assert str(call("add", x, x)) == "free_var %x: Tensor[(10, 1), float32];\nadd(%x, %x)"


def test_tutorial_function(call):
    x = Var("x", T)
    f = Function([x], call("add", x, x))
    assert str(f) == "fn (%x: Tensor[(10, 1), float32]) {\n  add(%x, %x)\n}"


def test_version_header_only_with_meta_data():
    x = Var("x", T)
    f = Function([x], x)
    assert f.astext().startswith('#[version = "0.0.5"]\nfn (')
    assert not str(f).startswith("#[")


def test_module_def_with_types_and_ret_type(call):
    x = Var("x", T)
    body = call("add", x, x)
    body._set_checked_type(T)
    mod = _module(f=Function([x], body, ret_type=T))
    assert str(mod) == (
        "def @f(%x: Tensor[(10, 1), float32]) -> Tensor[(10, 1), float32] {\n"
        "  add(%x, %x) /* ty=Tensor[(10, 1), float32] */\n"
        "}"
    )


def _mlp(call):
    data = Var("data", TensorType((1, 1, 28, 28)))
    params = [data]
    x = call("nn.batch_flatten", data)
    for i, units in enumerate((128, 64, 10), 1):
        w = Var(f"fc{i}_weight", TensorType((units, 784 if i == 1 else (128 if i == 2 else 64))))
        b = Var(f"fc{i}_bias", TensorType((units,)))
        params += [w, b]
        x = call("nn.bias_add", call("nn.dense", x, w, units=units), b, axis=-1)
        if i < 3:
            x = call("nn.relu", x)
    return Function(params, call("nn.softmax", x), ret_type=TensorType((1, 10)))


def test_annotate_callback_as_in_the_tutorial(call):
    counter = iter(range(1, 100))
    text = _mlp(call).astext(annotate=lambda node: f" <expression: {next(counter)}>")
    lines = text.splitlines()
    assert lines[0] == '#[version = "0.0.5"]'
    assert lines[1].startswith("fn (%data: Tensor[(1, 1, 28, 28), float32], %fc1_weight: ")
    assert lines[1].endswith(") -> Tensor[(1, 10), float32] {")
    assert lines[2:] == [
        "  %0 = nn.batch_flatten <expression: 1>(%data) <expression: 2>;",
        "  %1 = nn.dense <expression: 3>(%0, %fc1_weight, units=128) <expression: 4>;",
        "  %2 = nn.bias_add <expression: 5>(%1, %fc1_bias, axis=-1) <expression: 6>;",
        "  %3 = nn.relu <expression: 7>(%2) <expression: 8>;",
        "  %4 = nn.dense <expression: 3>(%3, %fc2_weight, units=64) <expression: 9>;",
        "  %5 = nn.bias_add <expression: 5>(%4, %fc2_bias, axis=-1) <expression: 10>;",
        "  %6 = nn.relu <expression: 7>(%5) <expression: 11>;",
        "  %7 = nn.dense <expression: 3>(%6, %fc3_weight, units=10) <expression: 12>;",
        "  %8 = nn.bias_add <expression: 5>(%7, %fc3_bias, axis=-1) <expression: 13>;",
        "  nn.softmax <expression: 14>(%8) <expression: 15>",
        "} <expression: 16>",
    ]


def test_ty_comments_only_when_typed(call):
    x = Var("x", TensorType((2, 3)))
    y = call("nn.relu", x)
    z = call("negative", y)
    f = Function([x], z)
    assert "ty=" not in str(f)
    y._set_checked_type(TensorType((2, 3)))
    assert str(f).splitlines()[1] == "  %0 = nn.relu(%x) /* ty=Tensor[(2, 3), float32] */;"


# -- attributes -----------------------------------------------------------------------


def test_call_attrs_print_non_defaults_in_schema_order(call):
    x, w = Var("x", TensorType((1, 3, 8, 8))), Var("w", TensorType((4, 3, 3, 3)))
    c = call("nn.conv2d", x, w, kernel_size=[3, 3], padding=[1, 1, 1, 1], channels=4)
    assert str(c).splitlines()[-1] == (
        "nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3])"
    )


def test_attr_value_kinds(call):
    x = Var("x", TensorType((2,)))
    c = call("my.attrs", x, flag=True, names=("a", 'q"uote'), table=((0, 0), (0, 1)), scale=0.1)
    assert str(c).splitlines()[-1] == (
        'my.attrs(%x, flag=True, names=["a", "q\\"uote"], table=[[0, 0], [0, 1]], scale=0.1f)'
    )
    clip = call("clip", x, a_min=-127.0, a_max=1e-05)
    assert str(clip).endswith("clip(%x, a_min=-127f, a_max=1e-05f)")
    drop = call("nn.dropout", x, rate=0.5)
    assert str(drop).endswith("nn.dropout(%x)")  # the default is not printed
    assert str(call("my.attrs", x, scale=0.1234567891)).endswith("scale=0.1234567891f)")
    assert str(call("clip", x, a_min=float("-inf"))).endswith("a_min=-inff)")


def test_function_attrs_after_params(call):
    a, b = Var("a", TensorType((2,))), Var("b", TensorType((2,)))
    f = Function([a, b], call("add", a, b), attrs={"Composite": "dnnl.add", "Primitive": 1})
    assert str(f).splitlines()[0] == (
        'fn (%a: Tensor[(2), float32], %b: Tensor[(2), float32], Composite="dnnl.add", '
        "Primitive=1) {"
    )


# -- expression kinds -------------------------------------------------------------------


def test_closure_callee_is_bound_to_a_temporary(call):
    a, b = Var("a", TensorType((2,))), Var("b", TensorType((2,)))
    inner = Function([a, b], call("nn.relu", call("add", a, b)), attrs={"Composite": "x.y"})
    x, y = Var("x", TensorType((2,))), Var("y", TensorType((2,)))
    outer = Function([x, y], call("negative", Call(inner, [x, y])))
    assert str(outer) == "\n".join(
        [
            "fn (%x: Tensor[(2), float32], %y: Tensor[(2), float32]) {",
            '  %1 = fn (%a: Tensor[(2), float32], %b: Tensor[(2), float32], Composite="x.y") {',
            "    %0 = add(%a, %b);",
            "    nn.relu(%0)",
            "  };",
            "  %2 = %1(%x, %y);",
            "  negative(%2)",
            "}",
        ]
    )


def test_tuples_and_projections(call):
    x = Var("x", TensorType((2,)))
    t = Tuple([call("nn.relu", x), x])
    f = Function([x], Tuple([TupleGetItem(t, 0), TupleGetItem(x, 1), Tuple([]), Tuple([x])]))
    assert str(f) == "\n".join(
        [
            "fn (%x: Tensor[(2), float32]) {",
            "  %0 = nn.relu(%x);",
            "  %1 = (%0, %x);",
            "  %2 = %1.0;",
            "  %3 = (%x).1;",
            "  %4 = ();",
            "  %5 = (%x,);",
            "  (%2, %3, %4, %5)",
            "}",
        ]
    )


def test_let_chain_and_let_as_value(call):
    x = Var("x", TensorType((2,)))
    a, b = Var("a", TensorType((2,))), Var("b")
    body = Let(a, call("nn.relu", call("negative", x)), Let(b, call("add", a, a), b))
    f = Function([x], body)
    assert str(f) == "\n".join(
        [
            "fn (%x: Tensor[(2), float32]) {",
            "  %0 = negative(%x);",
            "  let %a: Tensor[(2), float32] = nn.relu(%0);",
            "  let %b = add(%a, %a);",
            "  %b",
            "}",
        ]
    )
    nested = Function([x], call("negative", Let(a, x, call("add", a, a))))
    assert str(nested) == "\n".join(
        [
            "fn (%x: Tensor[(2), float32]) {",
            "  %0 = (",
            "    let %a: Tensor[(2), float32] = %x;",
            "    add(%a, %a)",
            "  );",
            "  negative(%0)",
            "}",
        ]
    )


def test_if_branches_get_their_own_scopes_and_shared_nodes_go_outside(call):
    c = Var("c", TensorType((), "bool"))
    x = Var("x", TensorType((2,)))
    shared = call("negative", x)
    then = call("add", shared, call("nn.relu", x))
    other = call("multiply", shared, shared)
    f = Function([c, x], If(c, then, other))
    assert str(f) == "\n".join(
        [
            "fn (%c: bool, %x: Tensor[(2), float32]) {",
            "  %0 = negative(%x);",
            "  if (%c) {",
            "    %1 = nn.relu(%x);",
            "    add(%0, %1)",
            "  } else {",
            "    multiply(%0, %0)",
            "  }",
            "}",
        ]
    )


def test_global_calls_and_defs_sorted_with_numbering_per_def(call):
    x = Var("x", TensorType((2,)))
    f_x = Var("x", TensorType((2,)))
    gv = GlobalVar("helper")
    main = Function([x], call("negative", call("nn.relu", Call(gv, [x]))))
    helper = Function([f_x], call("negative", call("nn.relu", f_x)))
    text = str(_module(main=main, helper=helper))
    assert text == "\n".join(
        [
            "def @helper(%x: Tensor[(2), float32]) {",
            "  %0 = nn.relu(%x);",
            "  negative(%0)",
            "}",
            "",
            "def @main(%x: Tensor[(2), float32]) {",
            "  %0 = @helper(%x);",
            "  %1 = nn.relu(%0);",
            "  negative(%1)",
            "}",
        ]
    )


def test_var_names_made_unique_and_valid():
    vs = [Var("x"), Var("x"), Var(""), Var("0"), Var("a-b"), Var("conv1.weight")]
    f = Function(vs, Tuple(vs))
    assert str(f).splitlines()[-2] == "  (%x, %x_1, %v, %v0, %a_b, %conv1.weight)"


def test_types_print_like_tvm():
    ts = [
        TensorType((64,)),
        TensorType((), "int32"),
        TupleType([TensorType((1,)), TensorType(())]),
        FuncType([TensorType((2,))], TensorType((2,))),
        IncompleteType(),
        TupleType([]),
    ]
    vs = [Var(f"v{i}", t) for i, t in enumerate(ts)]
    head = str(Function(vs, vs[0])).splitlines()[0]
    assert head == (
        "fn (%v0: Tensor[(64), float32], %v1: int32, %v2: (Tensor[(1), float32], float32), "
        "%v3: fn (Tensor[(2), float32]) -> Tensor[(2), float32], %v4: ?, %v5: ()) {"
    )


# -- constants --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,dtype,text",
    [
        (1.0, "float32", "1f"),
        (0.5, "float32", "0.5f"),
        (-127.0, "float32", "-127f"),
        (1.0, "float64", "1f64"),
        (1.0, "float16", "1f16"),
        (64, "int32", "64"),
        (16, "int64", "16i64"),
        (3, "int8", "3i8"),
        (-3, "int16", "-3i16"),
        (7, "uint8", "7u8"),
        (True, "bool", "True"),
        (0.1, "float32", "0.1f"),
        (1e-05, "float32", "1e-05f"),
    ],
)
def test_scalar_constants_inline(value, dtype, text, call):
    x = Var("x", TensorType((), dtype))
    c = Constant(np.array(value, dtype=dtype))
    assert str(call("add", x, c)).splitlines()[-1] == f"add(%x, {text})"


def test_tensor_constants_go_to_metadata_indexed_by_first_use(call):
    x = Var("x", TensorType((2,)))
    c0 = Constant(np.array([1.0, 2.0], "float32"))
    c1 = Constant(np.arange(6, dtype="int64").reshape(2, 3))
    f = Function([x], call("add", call("multiply", x, c0), call("add", c1, c0)))
    text = f.astext()
    assert "multiply(%x, meta[relay.Constant][0])" in text
    assert "add(meta[relay.Constant][1], meta[relay.Constant][0])" in text
    _code, meta = text.split("\n#[metadata]\n")
    assert meta.splitlines()[1] == '  {"shape": [2], "dtype": "float32", "data": "AACAPwAAAEA="},'
    short = str(f)
    assert "#[metadata]" not in short
    assert short.endswith(
        "// meta data omitted. you can use show_meta_data=True to include meta data"
    )


def test_typed_constants_show_their_type(call):
    x = Var("x", TensorType((), "int32"))
    body = call("add", x, Constant(np.array(64, "int32")))
    body._set_checked_type(TensorType((), "int32"))
    f = Function([x], body)
    f._set_checked_type(FuncType([x.type_annotation], x.type_annotation))
    assert str(f).splitlines()[1] == "  add(%x, 64 /* ty=int32 */) /* ty=int32 */"


# -- scale --------------------------------------------------------------------------------


def _chain(n, call):
    x = Var("x", TensorType((2,)))
    out = x
    for i in range(n):
        out = call("negative" if i % 2 else "nn.relu", out)
    return Function([x], out)


def test_100k_chain_prints_without_recursion(call):
    # Timing is measured by benchmarks/parse_scaling.py, not asserted here.
    text = str(_chain(100_000, call))
    lines = text.splitlines()
    assert len(lines) == 100_002
    assert lines[-2] == "  negative(%99998)"


def test_deeply_nested_scopes_do_not_recurse(call):
    c = Var("c", TensorType((), "bool"))
    x = Var("x", TensorType((2,)))
    out = x
    for _ in range(3000):
        out = If(c, call("negative", x), out)
        out = Function([], out)
        out = Call(out, [])
    text = str(Function([c, x], out))
    assert text.count("if (%c) {") == 3000


# -- context for error messages -----------------------------------------------------------


def test_context_lines_marks_the_node_and_crops(call):
    x = Var("x", TensorType((2,)))
    nodes = [x]
    for _ in range(20):
        nodes.append(call("negative", nodes[-1]))
    f = Function([x], nodes[-1])
    out = context_lines(f, nodes[10], radius=2)
    assert out.splitlines() == [
        "...",
        "  %7 = negative(%6);",
        "  %8 = negative(%7);",
        "  %9 = negative(%8);  /* <-- here */",
        "  %10 = negative(%9);",
        "  %11 = negative(%10);",
        "...",
    ]
    mod = _module(main=f)
    assert "%0 = negative(%x);  /* <-- here */" in context_lines(mod, nodes[1])
    assert "def @main(%x: Tensor[(2), float32]) {  /* <-- here */" in context_lines(mod, f)
    assert "(the node is not part of this IR)" in context_lines(f, Var("y"))
