"""Round trips: parse(print(x)) is structurally equal to x, and print(parse(text)) == text."""

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relaykit.ir import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    first_mismatch,
)
from relaykit.text import astext, parse, parse_expr

GOLDEN = Path(__file__).parent / "golden"


def _roundtrip_expr(expr, reg):
    text = astext(expr)
    back = parse_expr(text, registry=reg)
    assert first_mismatch(expr, back, map_free_vars=True) is None, text
    assert astext(back) == text
    return text


def _roundtrip_module(mod, reg=None, infer_types=False):
    text = astext(mod)
    back = parse(text, registry=reg, infer_types=infer_types)
    assert first_mismatch(mod, back) is None, text
    assert astext(back) == text
    return back


# -- every expression kind ----------------------------------------------------------------


def _kinds(call):
    x = Var("x", TensorType((2, 3)))
    y = Var("y", TensorType((2, 3)))
    c = Var("c", TensorType((), "bool"))
    t = Var("t", TupleType([TensorType((2, 3)), TensorType(())]))
    a = Var("a")
    k = Constant(np.arange(6, dtype="float32").reshape(2, 3))
    shared_scalar = Constant(np.array(2.0, "float32"))
    add = call("add", x, y)
    closure = Function([Var("p", TensorType((2, 3)))], y, attrs={"Composite": "t.add"})
    return {
        "var": x,
        "call_with_attrs": call("nn.conv2d", x, y, strides=[2, 2], data_layout="NHWC"),
        "shared_subexpression": call("multiply", add, add),
        "tuple": Tuple([x, add, Tuple([])]),
        "projection": TupleGetItem(Tuple([x, y]), 1),
        "var_projection": TupleGetItem(t, 0),
        "function": Function([x, y], add, TensorType((2, 3)), attrs={"Primitive": 1}),
        "closure_call": Call(closure, [x]),
        "let": Let(a, add, call("negative", a)),
        "let_value_is_let": Let(a, Let(Var("b"), x, x), a),
        "let_as_argument": call("negative", Let(a, x, a)),
        "if": If(c, call("negative", add), call("nn.relu", add)),
        "constants": Tuple(
            [
                k,
                call("add", k, k),
                Constant(np.array(3, "int8")),
                shared_scalar,
                shared_scalar,
                Constant(np.array(float("nan"), "float32")),
            ]
        ),
        "attrs_of_every_kind": call(
            "my.attrs", x, flag=True, names=("a", "b"), table=((0, 1), (2, 3)), scale=1.5
        ),
        "float_attrs": call("clip", x, a_min=-0.1234567891, a_max=float("inf")),
        "nested_functions": Function([x], Function([y], call("add", x, y))),
        "closure_over_free_var": Function([y], call("add", x, y)),
    }


_KINDS = [
    "var",
    "call_with_attrs",
    "shared_subexpression",
    "tuple",
    "projection",
    "var_projection",
    "function",
    "closure_call",
    "let",
    "let_value_is_let",
    "let_as_argument",
    "if",
    "constants",
    "attrs_of_every_kind",
    "float_attrs",
    "nested_functions",
    "closure_over_free_var",
]


def test_kind_list_is_complete(ops):
    assert list(_kinds(ops.call)) == _KINDS


@pytest.mark.parametrize("kind", _KINDS)
def test_every_expression_kind_round_trips(ops, kind):
    _roundtrip_expr(_kinds(ops.call)[kind], ops.reg)


def test_module_with_globals_round_trips(ops):
    x, y = Var("x", TensorType((2,))), Var("y", TensorType((2,)))
    gv = GlobalVar("helper")
    mod = IRModule()
    mod._add("helper", Function([y], ops.call("nn.relu", y), attrs={"global_symbol": "helper"}))
    mod._add("main", Function([x], Call(mod.get_global_var("helper"), [x])))
    assert gv is not mod.get_global_var("helper")
    _roundtrip_module(mod, ops.reg)


# -- workloads and golden files --------------------------------------------------------------


def _workloads():
    from relaykit.testing import mlp, mobilenet, resnet, vgg

    return {
        "mlp": lambda: mlp.get_workload(batch_size=1),
        "resnet18_32x32": lambda: resnet.get_workload(
            batch_size=1, num_classes=10, num_layers=18, image_shape=(3, 32, 32)
        ),
        "mobilenet_32x32": lambda: mobilenet.get_workload(
            batch_size=1, num_classes=10, image_shape=(3, 32, 32)
        ),
        "vgg11_32x32": lambda: vgg.get_workload(
            batch_size=1, num_classes=10, image_shape=(3, 32, 32)
        ),
    }


@pytest.mark.parametrize("name", ["mlp", "resnet18_32x32", "mobilenet_32x32", "vgg11_32x32"])
def test_workloads_round_trip_typed(name):
    mod, _ = _workloads()[name]()
    back = _roundtrip_module(mod, infer_types=True)
    assert back["main"].checked_type == mod["main"].checked_type


@pytest.mark.parametrize("name", ["mlp", "resnet18_32x32"])
def test_golden_text(name):
    mod, _ = _workloads()[name]()
    text = astext(mod) + "\n"
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("RELAYKIT_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"printed {name} differs from {path}"
    assert astext(parse(path.read_text())) + "\n" == text


# -- random expressions ----------------------------------------------------------------------

_STEP = st.tuples(
    st.integers(0, 10), st.integers(0, 50), st.integers(0, 50), st.floats(allow_nan=False, width=32)
)


def _build(steps, call):
    """A random expression DAG from a list of small instructions (shrinks well)."""
    x, y = Var("x", TensorType((2,))), Var("y", TensorType((2,)))
    cond = Var("c", TensorType((), "bool"))
    pool = [x, y]
    tuples = []
    for kind, i, j, f in steps:
        a, b = pool[i % len(pool)], pool[j % len(pool)]
        if kind == 0:
            node = call("nn.relu", a)
        elif kind == 1:
            node = call("add", a, b)
        elif kind == 2:
            node = Tuple([a, b] if i % 3 else [a])
            tuples.append(node)
        elif kind == 3 and tuples:
            tup = tuples[i % len(tuples)]
            node = TupleGetItem(tup, j % len(tup.fields))
        elif kind == 4:
            dtype = ["float32", "float16", "float64", "int8", "int64", "uint8", "bool"][i % 7]
            value = f if dtype.startswith("float") else (j if dtype != "bool" else j % 2)
            with np.errstate(over="ignore"):  # large floats become inf in float16
                node = Constant(np.array(value).astype(dtype))
        elif kind == 5:
            node = Constant(np.full((i % 3 + 1,), f, "float32"))
        elif kind == 6:
            v = Var(f"v{i}", TensorType((2,)) if j % 2 else None)
            node = Let(v, a, call("add", v, b))
        elif kind == 7:
            node = If(cond, a, b)
        elif kind == 8:
            p = Var("p", TensorType((2,)))
            node = Call(Function([p], call("add", p, b), attrs={"Composite": f"c{i}"}), [a])
        elif kind == 9:
            node = call("clip", a, a_min=float(f), a_max=float(i))
        else:
            node = call(
                "my.attrs",
                a,
                flag=bool(i % 2),
                names=tuple("ab"[: j % 3]),
                table=None if i % 2 else ((i, j),),
                scale=float(f),
            )
        pool.append(node)
    return Tuple(pool[-3:]) if len(pool) > 3 and steps[0][0] % 2 else pool[-1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_STEP, min_size=1, max_size=25))
def test_random_expressions_round_trip(ops, steps):
    _roundtrip_expr(_build(steps, ops.call), ops.reg)


# -- scale -----------------------------------------------------------------------------------


def _chain_text(n, call):
    x = Var("x", TensorType((2,)))
    out = x
    for i in range(n):
        out = call("negative" if i % 2 else "nn.relu", out)
    return astext(IRModule({"main": Function([x], out)}))


def test_100k_chain_parses_back(ops):
    # Timing is measured by benchmarks/parse_scaling.py, not asserted here.
    big = _chain_text(100_000, ops.call)
    mod = parse(big, registry=ops.reg, infer_types=False)
    assert astext(mod) == big


def test_byoc_pipeline_outputs_round_trip():
    """The BYOC demo flow (seed 000): every pass's output parses back to the same module."""
    import relaykit as tvm
    from relaykit.byoc import (
        AnnotateTarget,
        MergeCompilerRegions,
        MergeComposite,
        PartitionGraph,
        scoped_registries,
    )
    from relaykit.dataflow_pattern import is_op, wildcard
    from relaykit.testing import vgg

    def conv_relu(with_bias):
        conv = is_op("nn.conv2d")(wildcard(), wildcard())
        return is_op("nn.relu")(is_op("nn.bias_add")(conv, wildcard()) if with_bias else conv)

    patterns = [
        ("byoc-target.conv2d_relu_with_bias", conv_relu(True)),
        ("byoc-target.conv2d_relu_wo_bias", conv_relu(False)),
    ]
    with scoped_registries():
        tvm.ir.register_op_attr("nn.dense", "target.byoc-target", lambda expr: True)
        mod, _ = vgg.get_workload(batch_size=1, num_classes=10, image_shape=(3, 32, 32))
        for make in (
            lambda: MergeComposite(patterns),
            lambda: AnnotateTarget("byoc-target"),
            MergeCompilerRegions,
            PartitionGraph,
        ):
            mod = make()(mod)
            text = astext(mod)
            back = parse(text, infer_types=False)
            assert first_mismatch(mod, back) is None, text
            assert astext(back, show_meta_data=False).count("def @") == len(mod)
    assert 'Compiler="byoc-target"' in text and "Composite=" in text
