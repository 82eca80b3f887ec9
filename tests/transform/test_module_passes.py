"""CallGraph, RemoveUnusedFunctions, LambdaLift, EtaExpand, DivToMul, DefuseOps,
CombineParallelConv2D and the counting analyses: IR before/after and numerics."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.ir import GlobalVar, IRModule, assert_structural_equal
from relaykit.relay import transform
from relaykit.relay.analysis import CallGraph, get_total_mac_number, list_op_freqs

RNG = np.random.default_rng(27)


def _rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _run(mod, *args):
    out = relay.create_executor("debug", mod=mod).evaluate()(*args)
    return tuple(o.numpy() for o in out) if isinstance(out, tuple) else out.numpy()


def _chain_module():
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    mod = IRModule()
    g0, g1, dead = GlobalVar("g0"), GlobalVar("g1"), GlobalVar("dead")
    mod[g0] = relay.Function([x, y], x + y)
    mod[g1] = relay.Function([x, y], g0(g0(x, y), y))
    mod[dead] = relay.Function([x, y], x * y)
    mod["main"] = relay.Function([x, y], g1(x, y))
    return mod, g0, g1, dead


def test_call_graph_counts_and_recursion():
    mod, g0, g1, dead = _chain_module()
    cg = CallGraph(mod)
    assert cg.module is mod
    assert (cg.global_call_count(g0), cg.global_call_count(g1), cg.global_call_count("main")) == (
        0,
        1,
        1,
    )
    assert (cg.ref_count(g0), cg.ref_count(g1), cg.ref_count("main"), cg.ref_count(dead)) == (
        1,
        1,
        0,
        0,
    )
    assert "#refs = 0" in cg.print_var("main") and "g1" in str(cg)
    assert not cg.is_recursive(g1)
    i = relay.var("i", shape=(), dtype="int32")
    rec = GlobalVar("rec")
    mod[rec] = relay.Function(
        [i], relay.If(i < relay.const(1), i, rec(i - relay.const(1))), relay.TensorType((), "int32")
    )
    assert CallGraph(mod).is_recursive(rec)


def test_remove_unused_functions_keeps_what_main_reaches():
    mod, *_ = _chain_module()
    out = transform.RemoveUnusedFunctions()(mod)
    assert sorted(gv.name_hint for gv in out.get_global_vars()) == ["g0", "g1", "main"]
    kept = transform.RemoveUnusedFunctions(["dead"])(mod)
    assert [gv.name_hint for gv in kept.get_global_vars()] == ["dead"]


def test_lambda_lift_closure_and_recursion_run_the_same():
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    outer = relay.Function([y], relay.Function([x], x + y))
    mod = IRModule.from_expr(relay.Function([y], outer(y)(y * relay.const(2.0))))
    lifted = transform.LambdaLift()(mod)
    assert len(lifted.functions) == 3
    closures = [fn for _, fn in lifted.items() if isinstance(fn.body, relay.Function)]
    assert closures and closures[0].body.attrs["Closure"] == 1
    data = _rand(2)
    np.testing.assert_allclose(_run(lifted, data), _run(mod, data))

    i = relay.var("i", shape=(), dtype="int32")
    s = relay.var("s", shape=(2,))
    loop = relay.var("loop")
    body = relay.If(i < relay.const(5), loop(i + relay.const(1), s + x), s)
    main = relay.Function(
        [x], relay.Let(loop, relay.Function([i, s], body), loop(relay.const(0), x))
    )
    mod = transform.InferType()(IRModule.from_expr(main))
    lifted = transform.LambdaLift()(mod)
    assert len(lifted.functions) == 2
    assert CallGraph(lifted).is_recursive("lifted_name0")
    np.testing.assert_allclose(_run(lifted, data), _run(mod, data))


def test_inline_turns_a_global_used_as_a_value_into_the_function():
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    mod = IRModule()
    g = GlobalVar("g")
    mod[g] = relay.Function([x], x + x).with_attr("Inline", 1)
    mod["main"] = relay.Function([y], relay.Tuple([g(y), relay.Call(g, [y + y])]))
    pick = relay.var("p", "bool")
    mod["choose"] = relay.Function([pick, y], relay.Call(relay.If(pick, g, g), [y]))
    out = transform.Inline()(mod)
    assert not out.contains_global_var("g")
    assert out["main"].body.fields[0].op.name == "add"
    assert isinstance(out["choose"].body.op.true_branch, relay.Function)
    data = np.arange(2, dtype="float32")
    run = relay.create_executor(mod=out).evaluate(out.get_global_var("choose"))
    np.testing.assert_allclose(run(np.array(True), data).numpy(), data * 2)


def test_eta_expand_global_var():
    x = relay.var("x", shape=(), dtype="int32")
    mod = IRModule()
    aux = GlobalVar("aux")
    mod[aux] = relay.Function([x], x)
    mod["main"] = relay.Function([], aux)
    out = transform.EtaExpand(expand_global_var=True)(mod)
    p = relay.var("p", shape=(), dtype="int32")
    expected = relay.Function([p], aux(p), relay.TensorType((), "int32"))
    assert_structural_equal(out["main"].body, expected, map_free_vars=True)
    assert transform.EtaExpand()(mod) is mod


def test_div_to_mul_only_for_nonzero_float_constants():
    x = relay.var("x", shape=(3,))
    mod = IRModule.from_expr(relay.Function([x], x / relay.const(4.0)))
    out = transform.DivToMul()(mod)
    assert out["main"].body.op.name == "multiply"
    data = _rand(3)
    np.testing.assert_allclose(_run(out, data), _run(mod, data), rtol=1e-6)
    zero = IRModule.from_expr(relay.Function([x], x / relay.const(0.0)))
    assert transform.DivToMul()(zero)["main"].body.op.name == "divide"


def test_defuse_ops_undoes_fuse_ops():
    x = relay.var("x", shape=(1, 2, 4, 4))
    w = relay.const(_rand(3, 2, 3, 3))
    f = relay.Function([x], relay.nn.relu(relay.exp(relay.nn.conv2d(x, w, padding=1))))
    mod = transform.InferType()(IRModule.from_expr(f))
    fused = transform.FuseOps(fuse_opt_level=2)(mod)
    assert list_op_freqs(fused) == list_op_freqs(mod)
    out = transform.DefuseOps()(fused)
    assert_structural_equal(out["main"], mod["main"])


def test_combine_parallel_conv2d_with_followers():
    x = relay.var("x", shape=(1, 4, 6, 6))
    ws = [relay.var(f"w{k}", shape=(c, 4, 3, 3)) for k, c in enumerate((2, 3, 5))]
    ss = [relay.var(f"s{k}", shape=(c, 1, 1)) for k, c in enumerate((2, 3, 5))]
    outs = [
        relay.nn.relu(relay.multiply(relay.nn.conv2d(x, w), s)) for w, s in zip(ws, ss, strict=True)
    ]
    f = relay.Function([x, *ws, *ss], relay.Tuple(outs))
    mod = IRModule.from_expr(f)
    out = transform.CombineParallelConv2D(min_num_branches=3)(mod)
    assert list_op_freqs(out)["nn.conv2d"] == 1
    assert [fld.op.name for fld in out["main"].body.fields] == ["strided_slice"] * 3
    args = [_rand(1, 4, 6, 6), *(_rand(c, 4, 3, 3) for c in (2, 3, 5))]
    args += [_rand(c, 1, 1) for c in (2, 3, 5)]
    for got, want in zip(_run(out, *args), _run(mod, *args), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert transform.CombineParallelConv2D(min_num_branches=4)(mod)["main"].body.fields[
        0
    ].op.name == ("nn.relu")


def test_mac_count_of_conv_and_dense():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    conv = relay.nn.conv2d(x, w, padding=1)
    d = relay.nn.dense(relay.nn.batch_flatten(conv), relay.var("d", shape=(5, 256)))
    f = relay.Function(relay.analysis.free_vars(d), d)
    assert get_total_mac_number(f) == 1 * 4 * 8 * 8 * 3 * 9 + 5 * 256
