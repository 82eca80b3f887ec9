"""Failures TVM users reported, and what relaykit adds: transparent ops, pruning, pins."""

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import (
    AnnotateTarget,
    MergeCompilerRegions,
    PartitionGraph,
    configure_target,
    partition_for,
    pin,
)
from relaykit.byoc.merge_regions import merged_groups
from relaykit.byoc.partition import partition_module
from relaykit.transform import InferType


def module(*params, body):
    return InferType()(tvm.IRModule.from_expr(relay.Function(list(params), body)))


def check_equal_and_acyclic(byoc, mod, targets, **kw):
    st = byoc.stages(mod, targets, **kw)
    assert byoc.region_graph_is_acyclic(st["MergeCompilerRegions"])
    out = st["PartitionGraph"]
    InferType()(out)
    inputs = byoc.random_inputs(mod)
    byoc.assert_same_values(byoc.evaluate(out, inputs), byoc.evaluate(mod, inputs))
    return out


def functions_holding(byoc, mod):
    """For every region function, the sorted operator names inside it."""
    return {
        name: sorted(
            n.op.name
            for n in tvm.ir.post_order(fn.body)
            if isinstance(n, relay.Call) and isinstance(n.op, tvm.ir.Op)
        )
        for name, fn in byoc.region_functions(mod).items()
    }


def dense_block(layers, width=4):
    """A DenseNet-style block: every layer reads the concatenation of all earlier ones."""
    x = relay.var("x", shape=(1, width))
    params = [x]
    feats = [x]
    for k in range(layers):
        w = relay.var(f"w{k}", shape=(width, width * len(feats)))
        params.append(w)
        cat = relay.concatenate(relay.Tuple(list(feats)), axis=1)
        feats.append(relay.nn.relu(relay.nn.dense(cat, w)))
    return module(*params, body=relay.concatenate(relay.Tuple(feats), axis=1))


def test_densenet_block_with_every_op_supported_is_one_region_in_linear_work(byoc):
    byoc.supported("lib", "concatenate", "nn.dense", "nn.relu")
    small = dense_block(6)
    out = check_equal_and_acyclic(byoc, small, "lib")
    assert len(byoc.region_functions(out)) == 1
    big = dense_block(150)  # 11k tuple fields: TVM's merge pass hung on such blocks
    annotated = AnnotateTarget("lib")(big)
    stats = {}
    merged_groups(annotated["main"].body, stats=stats)
    assert stats["refused"] == 0
    assert stats["search_steps"] <= stats["edges"] + 4 * stats["units"], stats  # linear
    out = partition_for(big, "lib")
    assert len(byoc.region_functions(out)) == 1


def test_long_region_between_two_host_chains_merges_in_linear_time(byoc):
    """Each step of a supported chain takes a value from a host chain and feeds another:
    every merge must check both host chains for a way back (quadratic if done naively)."""
    byoc.supported("lib", "add", "nn.relu")

    def ladder(n):
        x = relay.var("x", shape=(1, 4))
        t, h, s = relay.nn.relu(x), relay.abs(x), None
        for _ in range(n):
            h = relay.abs(h)
            t = relay.add(t, h)
            d = relay.negative(t)
            s = d if s is None else relay.subtract(s, d)
        return module(x, body=relay.Tuple([t, s]))

    small = ladder(5)
    assert len(byoc.region_functions(check_equal_and_acyclic(byoc, small, "lib"))) == 1
    annotated = AnnotateTarget("lib")(ladder(3000))
    stats = {}
    merged_groups(annotated["main"].body, stats=stats)
    assert stats["refused"] == 0
    assert stats["merges"] == 3000  # relu and 3000 adds: one group
    assert stats["search_steps"] <= stats["edges"] + 4 * stats["units"], stats  # linear
    merged = MergeCompilerRegions()(annotated)
    assert len(byoc.region_functions(PartitionGraph()(merged))) == 1


def test_merge_through_if_that_would_create_a_cycle(byoc):
    byoc.supported("lib", "nn.relu", "add")
    x = relay.var("x", shape=(2, 3))
    a = relay.nn.relu(x)
    cond = relay.less(relay.sum(a), relay.const(0.0))
    branch = relay.If(cond, relay.abs(x), relay.negative(x))
    b = relay.add(a, branch)
    mod = module(x, body=b)
    out = check_equal_and_acyclic(byoc, mod, "lib")
    # relu and add may not share a region: a path leaves relu through sum/less/If.
    assert sorted(functions_holding(byoc, out).values()) == [["add"], ["nn.relu"]]


def test_merge_through_let_that_would_create_a_cycle(byoc):
    byoc.supported("lib", "nn.relu", "add")
    x = relay.var("x", shape=(2, 3))
    v = relay.var("v", shape=(2, 3))
    a = relay.nn.relu(x)
    let = relay.Let(v, relay.negative(a), relay.add(v, v))
    b = relay.add(a, let)
    mod = module(x, body=b)
    out = check_equal_and_acyclic(byoc, mod, "lib")
    holding = sorted(functions_holding(byoc, out).values())
    assert ["add", "nn.relu"] not in holding
    assert holding == [["add"], ["add"], ["nn.relu"]]


def test_regions_do_not_cross_an_if_branch(byoc):
    byoc.supported("lib", "nn.relu", "abs")
    x = relay.var("x", shape=(2, 3))
    inside = relay.If(
        relay.less(relay.sum(x), relay.const(0.0)), relay.abs(relay.nn.relu(x)), relay.nn.relu(x)
    )
    mod = module(x, body=relay.abs(inside))
    out = check_equal_and_acyclic(byoc, mod, "lib")
    for fn in byoc.region_functions(out).values():
        assert not any(isinstance(n, relay.If) for n in tvm.ir.post_order(fn.body))


def test_diamond_with_one_unsupported_branch(byoc):
    byoc.supported("lib", "nn.relu", "add", "negative")
    x = relay.var("x", shape=(2, 3))
    a = relay.negative(x)
    out = relay.add(relay.nn.relu(a), relay.abs(a))
    mod = module(x, body=out)
    res = check_equal_and_acyclic(byoc, mod, "lib")
    assert sorted(functions_holding(byoc, res).values()) == [["add"], ["negative", "nn.relu"]]


def test_multi_output_region_with_a_tuple_valued_operator(byoc):
    byoc.supported("lib", "nn.batch_norm", "nn.relu")
    x = relay.var("x", shape=(1, 2, 3, 3))
    g, b, m, v = (relay.var(n, shape=(2,)) for n in ("g", "b", "m", "v"))
    bn = relay.nn.batch_norm(x, g, b, m, relay.exp(v))  # a positive variance
    y = relay.nn.relu(bn[0])
    body = relay.Tuple([relay.negative(y), bn.astuple(), relay.abs(bn[1])])
    mod = module(x, g, b, m, v, body=body)
    out = check_equal_and_acyclic(byoc, mod, "lib")
    (fn,) = byoc.region_functions(out).values()
    # Outputs are flat: no tuple inside the returned tuple.
    assert isinstance(fn.body, relay.Tuple)
    assert all(not isinstance(f.checked_type, tvm.ir.TupleType) for f in fn.body.fields)


def test_tuple_output_region(byoc):
    byoc.supported("lib", "nn.relu", "abs")
    x = relay.var("x", shape=(2, 3))
    mod = module(x, body=relay.Tuple([relay.nn.relu(x), relay.abs(x)]))
    out = check_equal_and_acyclic(byoc, mod, "lib")
    assert len(byoc.region_functions(out)) == 1
    assert isinstance(out["main"].body, relay.Tuple)


def test_empty_tuples(byoc):
    byoc.supported("lib", "nn.relu")
    x = relay.var("x", shape=(2, 3))
    empty = relay.Tuple([])
    mod = module(x, body=relay.Tuple([relay.nn.relu(x), empty, relay.Tuple([empty])]))
    out = check_equal_and_acyclic(byoc, mod, "lib")
    assert len(byoc.region_functions(out)) == 1
    out = check_equal_and_acyclic(byoc, mod, "lib", include_non_call_ops=False)
    assert len(byoc.region_functions(out)) == 1


def test_stop_fusion_does_not_split_regions(byoc):
    byoc.supported("lib", "nn.relu", "abs")
    x = relay.var("x", shape=(2, 3))
    y = relay.abs(relay.annotation.stop_fusion(relay.nn.relu(x)))
    mod = module(x, body=y)
    out = check_equal_and_acyclic(byoc, mod, "lib")
    assert list(functions_holding(byoc, out).values()) == [
        ["abs", "annotation.stop_fusion", "nn.relu"]
    ]
    # A target that does not declare it transparent is split by it, as in TVM.
    configure_target("lib", transparent_ops=[])
    out = check_equal_and_acyclic(byoc, mod, "lib")
    assert sorted(functions_holding(byoc, out).values()) == [["abs"], ["nn.relu"]]


def test_targets_declare_more_transparent_ops(byoc):
    byoc.supported("lib", "nn.relu", "abs")
    configure_target("lib", transparent_ops=["annotation.stop_fusion", "copy"])
    x = relay.var("x", shape=(2, 3))
    mod = module(x, body=relay.abs(relay.copy(relay.nn.relu(x))))
    out = check_equal_and_acyclic(byoc, mod, "lib")
    assert list(functions_holding(byoc, out).values()) == [["abs", "copy", "nn.relu"]]


def test_min_region_ops_sends_small_regions_back_to_the_host(byoc):
    byoc.supported("lib", "nn.relu", "negative")
    x = relay.var("x", shape=(2, 3))
    y = relay.negative(relay.nn.relu(relay.abs(relay.nn.relu(x))))
    mod = module(x, body=y)
    assert len(byoc.region_functions(check_equal_and_acyclic(byoc, mod, "lib"))) == 2
    configure_target("lib", min_region_ops=2)
    out = check_equal_and_acyclic(byoc, mod, "lib")
    assert list(functions_holding(byoc, out).values()) == [["negative", "nn.relu"]]
    annotated = MergeCompilerRegions()(AnnotateTarget("lib")(mod))
    _, infos = partition_module(annotated)
    pruned = [i.pruned for i in infos if i.pruned]
    assert pruned == ["region pruned: 1 ops < min 2"]


def test_min_region_macs(byoc):
    byoc.supported("lib", "nn.dense", "nn.relu")
    x = relay.var("x", shape=(1, 8))
    w = relay.var("w", shape=(8, 8))
    y = relay.nn.relu(relay.abs(relay.nn.dense(x, w)))
    mod = module(x, w, body=y)
    configure_target("lib", min_region_macs=64)
    out = check_equal_and_acyclic(byoc, mod, "lib")
    assert list(functions_holding(byoc, out).values()) == [["nn.dense"]]


def test_pins_override_rules(byoc):
    byoc.supported("lib", "nn.relu", "abs")
    x = relay.var("x", shape=(2, 3))
    mod = module(x, body=relay.negative(relay.abs(relay.nn.relu(x))))
    out = check_equal_and_acyclic(byoc, mod, "lib", pin=[pin("abs")])
    assert list(functions_holding(byoc, out).values()) == [["nn.relu"]]
    out = check_equal_and_acyclic(byoc, mod, "lib", pin=[pin("negative", to="lib")])
    assert list(functions_holding(byoc, out).values()) == [["abs", "negative", "nn.relu"]]
    big = pin(lambda call: call.checked_type.shape[-1] > 2)
    out = check_equal_and_acyclic(byoc, mod, "lib", pin=[big])
    assert byoc.region_functions(out) == {}


def test_several_targets_in_priority_order(byoc):
    byoc.supported("a", "nn.relu")
    byoc.supported("b", "nn.relu", "abs")
    x = relay.var("x", shape=(2, 3))
    mod = module(x, body=relay.abs(relay.nn.relu(x)))
    out = check_equal_and_acyclic(byoc, mod, ["a", "b"])
    assert {fn.attrs["Compiler"] for fn in byoc.region_functions(out).values()} == {"a", "b"}
    out = check_equal_and_acyclic(byoc, mod, ["b", "a"])
    (fn,) = byoc.region_functions(out).values()
    assert fn.attrs["Compiler"] == "b"


def test_partition_for_binds_params_into_functions(byoc):
    byoc.supported("lib", "nn.dense")
    x = relay.var("x", shape=(1, 8))
    w = relay.var("w", shape=(4, 8))
    mod = module(x, w, body=relay.nn.softmax(relay.nn.dense(x, w)))
    weights = {"w": np.ones((4, 8), "float32")}
    out = partition_for(mod, "lib", params=weights)
    (fn,) = byoc.region_functions(out).values()
    assert len(fn.params) == 1
    assert [p.name_hint for p in out["main"].params] == ["x"]


def test_partition_graph_is_a_pass_in_a_sequential(byoc):
    byoc.supported("lib", "nn.relu")
    x = relay.var("x", shape=(2, 3))
    mod = module(x, body=relay.abs(relay.nn.relu(x)))
    seq = tvm.transform.Sequential(
        [AnnotateTarget("lib"), MergeCompilerRegions(), PartitionGraph()]
    )
    out = seq(mod)
    assert len(byoc.region_functions(out)) == 1
    with tvm.transform.PassContext(disabled_pass=["PartitionGraph"]):
        assert byoc.region_functions(seq(mod)) == {}
