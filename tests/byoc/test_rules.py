"""Target rules, pattern tables, target specs and pins."""

import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import (
    AnnotateTarget,
    PartitionError,
    RuleError,
    TargetChooser,
    check_op,
    configure_target,
    decline,
    get_target_spec,
    pin,
    scoped_registries,
)
from relaykit.byoc.pins import as_pins
from relaykit.dataflow_pattern import is_op, wildcard
from relaykit.op.contrib import get_pattern_table, list_pattern_tables, register_pattern_table
from relaykit.transform import infer_type


def typed(expr):
    infer_type(expr)
    return expr


def dense_call(dtype="float32"):
    x = relay.var("x", shape=(2, 4), dtype=dtype)
    w = relay.var("w", shape=(3, 4), dtype=dtype)
    return typed(relay.nn.dense(x, w))


def test_new_style_rule_receives_the_typed_call():
    seen = []

    @tvm.ir.register_op_attr("nn.dense", "target.lib")
    def dense(expr):
        seen.append(expr)
        return expr.args[0].checked_type.dtype == "float32"

    call = dense_call()
    assert check_op(call, "lib").accepted
    assert seen == [call]
    assert not check_op(dense_call("float16"), "lib").accepted


def test_old_style_rule_receives_attrs_and_args():
    seen = []

    def dense(attrs, args):
        seen.append((attrs, args))
        return True

    tvm.ir.register_op_attr("nn.dense", "target.old", dense)
    call = dense_call()
    verdict = check_op(call, "old")
    assert verdict.accepted
    assert seen[0][0] is call.attrs and list(seen[0][1]) == list(call.args)


def test_decline_carries_its_reason_and_plain_false_declines_too():
    tvm.ir.register_op_attr("nn.dense", "target.a", lambda e: decline("only int8 here"))
    tvm.ir.register_op_attr("nn.dense", "target.b", lambda e: False)
    tvm.ir.register_op_attr("nn.dense", "target.c", lambda e: None)
    call = dense_call()
    assert check_op(call, "a").reason == "declined: only int8 here"
    assert not check_op(call, "a").accepted
    assert "returned False" in check_op(call, "b").reason
    assert "returned None" in check_op(call, "c").reason
    assert check_op(call, "nowhere").reason == (
        "no rule registered for nn.dense (no target.nowhere attribute)"
    )
    assert not decline("x")


def test_constant_rule_values_are_accepted():
    tvm.ir.register_op_attr("nn.dense", "target.yes", True)
    assert check_op(dense_call(), "yes").accepted


def test_a_rule_that_raises_is_reported_with_the_operator():
    def broken(expr):
        raise ValueError("boom")

    tvm.ir.register_op_attr("nn.dense", "target.broken", broken)
    with pytest.raises(RuleError, match=r"'target.broken' rule of nn.dense raised ValueError"):
        check_op(dense_call(), "broken")


def test_first_target_in_the_list_wins():
    tvm.ir.register_op_attr("nn.dense", "target.a", True)
    tvm.ir.register_op_attr("nn.dense", "target.b", True)
    call = dense_call()
    assert TargetChooser(["b", "a"]).choose(call, None) == "b"
    assert TargetChooser(["a", "b"]).choose(call, None) == "a"
    decision = TargetChooser(["a", "b"]).decide(call, None)
    assert decision.target == "a"
    assert decision.reasons["b"].endswith("but a comes first in the target list")


def test_registrations_do_not_leak_out_of_a_scope():
    with scoped_registries():
        tvm.ir.register_op_attr("nn.dense", "target.scoped", True)
        register_pattern_table("scoped", lambda: [("scoped.x", is_op("abs")(wildcard()))])
        configure_target("scoped", min_region_ops=5)
        assert check_op(dense_call(), "scoped").accepted
    assert not check_op(dense_call(), "scoped").accepted
    assert get_pattern_table("scoped") is None
    assert get_target_spec("scoped").min_region_ops == 0


def test_pattern_table_registry_as_tvm():
    @register_pattern_table("mylib")
    def table():
        return [("mylib.abs", is_op("abs")(wildcard()))]

    assert [name for name, _ in get_pattern_table("mylib")] == ["mylib.abs"]
    assert "mylib" in list_pattern_tables()
    with pytest.raises(tvm.errors.IRError, match="must be a list"):
        register_pattern_table("bad", lambda: "not a table")


def test_target_spec_validation():
    spec = configure_target("lib", min_region_ops=3, transparent_ops=["copy"])
    assert spec.min_region_ops == 3 and spec.transparent_ops == frozenset({"copy"})
    spec = configure_target("lib", min_region_macs=10)
    assert spec.min_region_ops == 3 and spec.min_region_macs == 10
    with pytest.raises(PartitionError, match="min_region_ops of target 'lib' must be an int"):
        configure_target("lib", min_region_ops=-1)
    with pytest.raises(PartitionError, match="not a registered operator"):
        configure_target("lib", transparent_ops=["no.such.op"])
    with pytest.raises(PartitionError, match="'default' is the host"):
        configure_target("default")
    assert "annotation.stop_fusion" in get_target_spec("other").transparent_ops


def test_pins_by_name_and_predicate():
    call = dense_call()
    p = pin("nn.dense")
    assert p.matches(call) and p.target == "default"
    q = pin(lambda c: c.checked_type.shape[0] > 1, to="lib")
    assert q.matches(call) and q.target == "lib"
    both = pin("nn.relu", lambda c: True)
    assert not both.matches(call)
    with pytest.raises(PartitionError, match="not one of the targets"):
        as_pins([pin("nn.dense", to="elsewhere")], ["lib"])
    with pytest.raises(PartitionError, match="needs an operator name or a predicate"):
        pin()
    tvm.ir.register_op_attr("nn.dense", "target.lib", True)
    chooser = TargetChooser(["lib"], as_pins("nn.dense", ["lib"]))
    assert chooser.choose(call, None) == "default"
    assert chooser.decide(call, None).reasons["lib"].startswith("pinned to host by user")


def test_invalid_targets_are_rejected():
    with pytest.raises(PartitionError, match="listed twice"):
        AnnotateTarget(["a", "a"])
    with pytest.raises(PartitionError, match="invalid target name 'default'"):
        AnnotateTarget("default")
