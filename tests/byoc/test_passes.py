"""The four passes on small graphs: before/after IR and the details of their output."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import (
    AnnotateTarget,
    MergeCompilerRegions,
    MergeComposite,
    PartitionError,
    PartitionGraph,
    partition_for,
)
from relaykit.byoc._common import make_begin, make_end
from relaykit.dataflow_pattern import is_constant, is_op, wildcard
from relaykit.ir import structural_equal
from relaykit.transform import InferType


def module(*params, body):
    return InferType()(tvm.IRModule.from_expr(relay.Function(list(params), body)))


def assert_main_equal(mod, expected_body, params):
    expected = InferType()(tvm.IRModule.from_expr(relay.Function(params, expected_body)))
    assert structural_equal(mod["main"], expected["main"]), (
        f"got:\n{mod['main']}\nexpected:\n{expected['main']}"
    )


# -- AnnotateTarget ---------------------------------------------------------------------------
def test_annotate_target_wraps_every_operator(byoc):
    byoc.supported("lib", "nn.relu")
    x = relay.var("x", shape=(2, 3))
    mod = module(x, body=relay.abs(relay.nn.relu(x)))
    out = AnnotateTarget("lib")(mod)
    b0 = make_begin(x, "lib")
    r = relay.nn.relu(b0)
    e0 = make_end(r, "lib")
    a = relay.abs(make_begin(e0, "default"))
    assert_main_equal(out, make_end(a, "default"), [x])


def test_annotate_target_tuples_take_the_common_target(byoc):
    byoc.supported("lib", "nn.relu", "abs")
    x = relay.var("x", shape=(2, 3))
    r, a = relay.nn.relu(x), relay.abs(x)
    mod = module(x, body=relay.Tuple([r, a]))
    out = AnnotateTarget("lib")(mod)
    r2 = make_end(relay.nn.relu(make_begin(x, "lib")), "lib")
    a2 = make_end(relay.abs(make_begin(x, "lib")), "lib")
    tup = relay.Tuple([make_begin(r2, "lib"), make_begin(a2, "lib")])
    assert_main_equal(out, make_end(tup, "lib"), [x])
    # Without non-call ops, the tuple stays unannotated.
    out = AnnotateTarget("lib", include_non_call_ops=False)(mod)
    assert_main_equal(out, relay.Tuple([r2, a2]), [x])


def test_annotate_target_composite_goes_to_its_prefix_target(byoc):
    x = relay.var("x", shape=(2, 3))
    table = [
        ("lib.abs_relu", is_op("nn.relu")(is_op("abs")(wildcard()))),
        ("other.neg", is_op("negative")(wildcard())),
    ]
    mod = MergeComposite(table)(module(x, body=relay.negative(relay.nn.relu(relay.abs(x)))))
    out = AnnotateTarget(["lib"])(mod)
    text = out["main"].astext(False)
    assert 'compiler_begin(%x, compiler="lib")' in text
    # "other" is not a target: its composite stays on the host.
    assert text.count('compiler="default"') == 2


def test_annotate_target_again_keeps_earlier_targets(byoc):
    byoc.supported("a", "nn.relu")
    byoc.supported("b", "abs", "nn.relu")
    x = relay.var("x", shape=(2, 3))
    mod = module(x, body=relay.abs(relay.nn.relu(x)))
    once = AnnotateTarget("a")(mod)
    twice = AnnotateTarget("b")(once)
    text = twice["main"].astext(False)
    assert "nn.relu(%0)" in text and 'compiler_begin(%x, compiler="a")' in text
    assert text.count('compiler="b"') == 2


def test_annotate_target_checks_and_fills_types(byoc):
    byoc.supported("lib", "nn.relu")
    x = relay.var("x", shape=(2, 3))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    out = AnnotateTarget("lib")(mod)
    assert str(out["main"].body.checked_type) == "Tensor[(2, 3), float32]"
    assert str(out["main"].body.args[0].args[0].checked_type) == "Tensor[(2, 3), float32]"


# -- MergeCompilerRegions -------------------------------------------------------------------
def test_merge_compiler_regions_merges_a_chain(byoc):
    byoc.supported("lib", "nn.relu", "abs")
    x = relay.var("x", shape=(2, 3))
    mod = module(x, body=relay.abs(relay.nn.relu(x)))
    out = MergeCompilerRegions()(AnnotateTarget("lib")(mod))
    merged = make_end(relay.abs(relay.nn.relu(make_begin(x, "lib"))), "lib")
    assert_main_equal(out, merged, [x])


def test_merge_compiler_regions_keeps_outputs_used_outside(byoc):
    byoc.supported("lib", "nn.relu", "abs")
    x = relay.var("x", shape=(2, 3))
    r = relay.nn.relu(x)
    mod = module(x, body=relay.Tuple([relay.abs(r), relay.negative(r)]))
    out = MergeCompilerRegions()(AnnotateTarget("lib", include_non_call_ops=False)(mod))
    r2 = relay.nn.relu(make_begin(x, "lib"))
    a2 = make_end(relay.abs(r2), "lib")
    n2 = make_end(relay.negative(make_begin(make_end(r2, "lib"), "default")), "default")
    assert_main_equal(out, relay.Tuple([a2, n2]), [x])


def test_merge_is_idempotent(byoc):
    byoc.supported("lib", "nn.relu", "abs", "add")
    x = relay.var("x", shape=(2, 3))
    y = relay.add(relay.nn.relu(x), relay.abs(x))
    mod = MergeCompilerRegions()(AnnotateTarget("lib")(module(x, body=y)))
    again = MergeCompilerRegions()(mod)
    assert structural_equal(again["main"], mod["main"])


# -- PartitionGraph -------------------------------------------------------------------------
def test_partition_graph_names_attributes_and_params(byoc):
    byoc.supported("my-lib.v2", "nn.relu", "abs")
    x = relay.var("x", shape=(2, 3))
    mod = module(x, body=relay.negative(relay.abs(relay.nn.relu(x))))
    out = partition_for(mod, "my-lib.v2", mod_name="mod")
    funcs = byoc.region_functions(out)
    assert list(funcs) == ["tvmgen_mod_my_lib_v2_main_0"]
    fn = funcs["tvmgen_mod_my_lib_v2_main_0"]
    assert dict(fn.attrs) == {
        "Compiler": "my-lib.v2",
        "Inline": 1,
        "Primitive": 1,
        "global_symbol": "tvmgen_mod_my_lib_v2_main_0",
    }
    assert [p.name_hint for p in fn.params] == ["my_lib_v2_0_i0"]
    main = out["main"]
    assert main.body.op.name == "negative"
    assert main.body.args[0].op.name_hint == "tvmgen_mod_my_lib_v2_main_0"


def test_partition_graph_multi_output_region_returns_a_tuple(byoc):
    byoc.supported("lib", "nn.relu", "abs")
    x = relay.var("x", shape=(2, 3))
    r = relay.nn.relu(x)
    a = relay.abs(r)
    body = relay.Tuple([relay.negative(r), relay.negative(a)])
    mod = module(x, body=body)
    out = byoc.partition(mod, "lib")
    ((_name, fn),) = byoc.region_functions(out).items()
    assert isinstance(fn.body, relay.Tuple) and len(fn.body.fields) == 2
    projections = [n for n in tvm.ir.post_order(out["main"]) if isinstance(n, relay.TupleGetItem)]
    assert sorted(p.index for p in projections) == [0, 1]
    inputs = byoc.random_inputs(mod)
    byoc.assert_same_values(byoc.evaluate(out, inputs), byoc.evaluate(mod, inputs))


def test_partition_graph_flattens_nested_tuple_outputs(byoc):
    byoc.supported("lib", "nn.relu", "abs", "negative")
    x = relay.var("x", shape=(2, 3))
    r, a, n = relay.nn.relu(x), relay.abs(x), relay.negative(x)
    body = relay.Tuple([relay.Tuple([r, a]), n])
    mod = module(x, body=body)
    out = byoc.partition(mod, "lib")
    (fn,) = byoc.region_functions(out).values()
    assert isinstance(fn.body, relay.Tuple)
    assert [type(f) for f in fn.body.fields] == [relay.Call] * 3
    inputs = byoc.random_inputs(mod)
    byoc.assert_same_values(byoc.evaluate(out, inputs), byoc.evaluate(mod, inputs))


@pytest.mark.parametrize("bind", [True, False])
def test_partition_graph_binds_constants(byoc, bind):
    byoc.supported("lib", "add")
    x = relay.var("x", shape=(2, 3))
    c = relay.const(np.ones((2, 3), "float32"))
    mod = module(x, body=relay.add(x, c))
    annotated = MergeCompilerRegions()(AnnotateTarget("lib")(mod))
    out = PartitionGraph(bind_constants=bind)(annotated)
    (fn,) = byoc.region_functions(out).values()
    assert len(fn.params) == (1 if bind else 2)
    assert any(isinstance(n, relay.Constant) for n in tvm.ir.post_order(fn.body)) == bind
    inputs = byoc.random_inputs(mod)
    byoc.assert_same_values(byoc.evaluate(out, inputs), byoc.evaluate(mod, inputs))


def test_partition_graph_on_hand_written_annotations(byoc):
    """As TVM's tests write them: annotations by hand, two regions, shared inputs."""
    x = relay.var("x", shape=(10, 10))
    w0, w1 = relay.var("w0", shape=(10, 10)), relay.var("w1", shape=(10, 10))
    begin, end = relay.annotation.compiler_begin, relay.annotation.compiler_end
    q0 = end(relay.add(begin(x, "ccompiler"), begin(w0, "ccompiler")), "ccompiler")
    q1 = end(relay.subtract(begin(x, "ccompiler"), begin(w1, "ccompiler")), "ccompiler")
    r = relay.Tuple([q0, q1])
    mod = module(x, w0, w1, body=relay.concatenate(r, axis=0))
    out = PartitionGraph()(mod)
    assert list(byoc.region_functions(out)) == [
        "tvmgen_default_ccompiler_main_0",
        "tvmgen_default_ccompiler_main_2",
    ]
    inputs = byoc.random_inputs(mod)
    byoc.assert_same_values(byoc.evaluate(out, inputs), byoc.evaluate(mod, inputs))


def test_partition_graph_rejects_inconsistent_annotations():
    x = relay.var("x", shape=(2,))
    y = relay.var("y", shape=(2,))
    bad = relay.annotation.compiler_end(relay.add(relay.annotation.compiler_begin(x, "a"), y), "a")
    with pytest.raises(PartitionError, match="neither annotated with compiler_begin"):
        PartitionGraph()(module(x, y, body=bad))
    other = relay.annotation.compiler_end(relay.abs(relay.annotation.compiler_begin(x, "a")), "b")
    with pytest.raises(PartitionError, match="closes a region of target 'a'"):
        PartitionGraph()(module(x, body=other))


def test_partition_graph_without_annotations_changes_nothing():
    x = relay.var("x", shape=(2,))
    mod = module(x, body=relay.abs(x))
    out = PartitionGraph()(mod)
    assert structural_equal(out["main"], mod["main"])
    assert len(out.get_global_vars()) == 1


def test_partitioned_module_type_checks(byoc):
    byoc.supported("lib", "nn.relu", "add")
    x = relay.var("x", shape=(2, 3))
    mod = module(x, body=relay.add(relay.nn.relu(x), relay.abs(x)))
    out = byoc.partition(mod, "lib")
    rechecked = InferType()(tvm.IRModule(dict(out.functions)))
    assert rechecked["main"].checked_type == mod["main"].checked_type


# -- MergeComposite -------------------------------------------------------------------------
def test_merge_composite_applies_entries_in_order_with_checks():
    x = relay.var("x", shape=(2, 3))
    c = relay.const(np.full((2, 3), 2.0, "float32"))
    mod = module(x, body=relay.nn.relu(relay.add(x, c)))
    add_relu = is_op("nn.relu")(is_op("add")(wildcard(), is_constant()))
    relu = is_op("nn.relu")(wildcard())
    out = MergeComposite([("lib.relu", relu), ("lib.add_relu", add_relu)])(mod)
    assert out["main"].body.op.attrs["Composite"] == "lib.relu"
    out = MergeComposite([("lib.add_relu", add_relu, lambda e: False), ("lib.relu", relu)])(mod)
    assert out["main"].body.op.attrs["Composite"] == "lib.relu"
    out = MergeComposite([("lib.add_relu", add_relu), ("lib.relu", relu)])(mod)
    fn = out["main"].body.op
    assert fn.attrs["Composite"] == "lib.add_relu"
    assert fn.attrs["PartitionedFromPattern"] == "add_nn.relu_"
    assert len(fn.params) == 1  # the constant is embedded
    assert out["main"].body.has_checked_type


def test_merge_composite_rejects_bad_tables():
    with pytest.raises(PartitionError, match="entry 0 must be"):
        MergeComposite([("only-a-name",)])
    with pytest.raises(PartitionError, match="expected a dataflow pattern"):
        MergeComposite([("lib.x", "not a pattern")])


def test_composite_functions_are_typed_like_tvms():
    """A composite function carries its parameter types and return type (TVM's
    MergeComposite output after its type inference)."""
    a = relay.var("a", shape=(2, 3))
    b = relay.var("b", shape=(2, 3))
    mod = tvm.IRModule.from_expr(relay.Function([a, b], relay.nn.relu(relay.add(a, b))))
    table = [("t.add_relu", is_op("nn.relu")(is_op("add")(wildcard(), wildcard())))]
    fn = relay.transform.MergeComposite(table)(mod)["main"].body.op
    assert fn.attrs["Composite"] == "t.add_relu"
    assert [p.name_hint for p in fn.params] == ["FunctionVar_0_0", "FunctionVar_0_1"]
    assert [tuple(p.type_annotation.shape) for p in fn.params] == [(2, 3), (2, 3)]
    assert tuple(fn.ret_type.shape) == (2, 3)
    assert fn.ret_type.dtype == "float32"


def test_annotate_target_one_compiler_end_per_use():
    """As TVM's AnnotateTarget: a producer used twice is closed by two compiler_ends."""
    x = relay.var("x", shape=(4,))
    r = relay.nn.relu(x)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(relay.abs(r), relay.abs(r))))
    body = relay.transform.AnnotateTarget("nowhere")(mod)["main"].body
    # end(add(begin(end(abs(begin(end(relu)))))), ...)
    abs_calls = [b.args[0].args[0] for b in body.args[0].args]
    relu_ends = [a.args[0].args[0] for a in abs_calls]
    assert all(e.op.name == "annotation.compiler_end" for e in relu_ends)
    assert relu_ends[0] is not relu_ends[1]
    assert relu_ends[0].args[0] is relu_ends[1].args[0]
