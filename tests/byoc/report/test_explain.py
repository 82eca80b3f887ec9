"""``explain``: where every operator went and, per target, why."""

import json

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import configure_target, decline, explain, partition_for, pin
from relaykit.byoc.report.summary import summarize
from relaykit.dataflow_pattern import is_op, wildcard
from relaykit.transform import InferType


def model():
    x = relay.var("x", shape=(1, 8))
    w = relay.var("w", shape=(8, 8))
    d = relay.nn.dense(x, w)
    r = relay.nn.relu(relay.abs(d))
    s = relay.nn.softmax(relay.negative(r))
    return InferType()(tvm.IRModule.from_expr(relay.Function([x, w], s)))


def setup_rules():
    tvm.ir.register_op_attr("nn.dense", "target.a", lambda e: decline("a has no GEMM"))
    tvm.ir.register_op_attr("nn.dense", "target.b", lambda e: True)
    tvm.ir.register_op_attr("negative", "target.a", lambda attrs, args: True)
    return [("a.abs_relu", is_op("nn.relu")(is_op("abs")(wildcard())))]


def test_every_operator_gets_a_row_with_a_reason_per_target():
    table = setup_rules()
    report = explain(model(), ["a", "b"], table)
    rows = {r.op: r for r in report.ops}
    assert [r.op for r in report.ops] == ["nn.dense", "abs", "nn.relu", "negative", "nn.softmax"]
    dense = rows["nn.dense"]
    assert dense.placement == "b"
    assert dense.reasons["a"] == "declined: a has no GEMM"
    assert dense.reasons["b"] == "accepted by the target.b rule of nn.dense"
    assert rows["abs"].composite == "a.abs_relu"
    assert rows["abs"].reasons["a"] == "pattern a.abs_relu matched"
    assert rows["abs"].reasons["b"] == "inside composite a.abs_relu, which is for a"
    assert rows["nn.softmax"].placement == "host"
    assert rows["nn.softmax"].reasons == {
        "a": "no rule registered for nn.softmax",
        "b": "no rule registered for nn.softmax",
    }
    # The functions named in the report are the ones partition_for makes.
    out = partition_for(model(), ["a", "b"], patterns=table)
    made = {gv.name_hint for gv, f in out.items() if "Compiler" in f.attrs}
    assert {r.function for r in report.ops if r.function} == made
    assert rows["abs"].function == rows["negative"].function  # merged: abs, relu, negative


def test_pins_and_pruning_are_explained():
    table = setup_rules()
    configure_target("b", min_region_ops=2)
    report = explain(model(), ["a", "b"], table, pin=[pin("negative")])
    rows = {r.op: r for r in report.ops}
    assert rows["negative"].placement == "host"
    assert rows["negative"].why == "pinned to host by user"
    assert rows["negative"].reasons["a"].startswith("pinned to host by user")
    assert rows["nn.dense"].placement == "host"
    assert rows["nn.dense"].why == "region pruned: 1 ops < min 2"
    assert rows["nn.dense"].reasons["b"].endswith("region pruned: 1 ops < min 2")
    assert any(g.pruned == "region pruned: 1 ops < min 2" for g in report.regions)


def test_report_prints_as_a_table_and_as_json():
    table = setup_rules()
    report = explain(model(), ["a", "b"], table)
    text = str(report)
    lines = text.splitlines()
    assert lines[0].split() == ["#", "operator", "placement", "function", "why"]
    assert "a: declined: a has no GEMM" in text
    assert lines[-1].startswith("5 operators: 3 on a, 1 on b, 1 on host; 2 functions")
    data = json.loads(report.to_json())
    assert data["targets"] == ["a", "b"]
    assert data["placements"] == {"b": 1, "a": 3, "host": 1}
    assert data["ops"][0]["reasons"]["a"] == "declined: a has no GEMM"
    assert len(data["regions"]) == 2


def test_explain_uses_registered_pattern_tables():
    from relaykit.op.contrib import register_pattern_table

    table = setup_rules()
    register_pattern_table("a", lambda: table)
    report = explain(model(), ["a", "b"])
    assert report.for_op("abs")[0].composite == "a.abs_relu"


def test_each_region_reports_the_dtypes_its_tensors_carry():
    # an int8 layer: uint8 activations, int8 weights, an int32 accumulator, then float
    x = relay.var("x", shape=(1, 8), dtype="uint8")
    w = relay.var("w", shape=(4, 8), dtype="int8")
    acc = relay.nn.dense(relay.cast(x, "int32"), relay.cast(w, "int32"), out_dtype="int32")
    y = relay.multiply(relay.cast(acc, "float32"), relay.const(0.5))
    mod = InferType()(tvm.IRModule.from_expr(relay.Function([x, w], y)))
    tvm.ir.register_op_attr("nn.dense", "target.a", lambda e: True)
    tvm.ir.register_op_attr("cast", "target.a", lambda e: True)
    report = explain(mod, ["a"])
    (region,) = [g for g in report.regions if g.function is not None]
    assert region.dtypes == ("uint8", "int8", "int32", "float32")
    assert json.loads(report.to_json())["regions"][0]["dtypes"] == list(region.dtypes)
    summary = summarize(mod, "a")
    (fn,) = summary.targets["a"].functions
    assert fn.dtypes == ["uint8", "int8", "int32", "float32"]
    assert "uint8,int8,int32,float32" in str(summary)
