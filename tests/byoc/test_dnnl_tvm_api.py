"""TVM's ``relay.op.contrib.dnnl`` helpers on relaykit's dnnl backend, checked with NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.contrib import graph_executor
from relaykit.errors import IRError

dnnl_pkg = pytest.importorskip("relaykit.backends.dnnl")
api = pytest.importorskip("relaykit.backends.dnnl.partition.tvm_api")
needs_onednn = pytest.mark.skipif(not dnnl_pkg.is_available(), reason="oneDNN is not installed")

RNG = np.random.default_rng(3)


def rand(*shape: int) -> np.ndarray:
    return RNG.uniform(-1.0, 1.0, shape).astype("float32")


def run_host(mod: tvm.IRModule, **inputs: np.ndarray) -> np.ndarray:
    lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(**inputs)
    return m.get_output(0).numpy()


def test_the_helpers_are_tvms_relay_op_contrib_dnnl():
    from relaykit.op.contrib import dnnl

    for name in (
        "partition_for_dnnl",
        "pattern_table",
        "legalize_group_conv",
        "alter_conv",
        "alter_conv_transpose",
        "rewrite_layer_norm",
        "rewrite_dense_bias_gelu_reshape_last",
        "legalize_qnn_for_dnnl",
        "prune_dnnl_subgraphs",
        "get_optimal_layout_for_conv",
    ):
        assert callable(getattr(dnnl, name)), name


def layer_norm_chain(x: relay.Expr, gamma: relay.Expr, beta: relay.Expr, square: str):
    mu = relay.mean(x, axis=-1, keepdims=True)
    d = x - mu
    sq = d * d if square == "mul" else relay.power(d, relay.const(2.0))
    var = relay.mean(sq, axis=-1, keepdims=True)
    return d / relay.sqrt(var + relay.const(1e-6)) * gamma + beta


@pytest.mark.parametrize("square", ["mul", "pow"])
def test_rewrite_layer_norm_makes_one_layer_norm_with_the_same_values(square):
    x = relay.var("x", shape=(2, 3, 8))
    g, b = rand(8), rand(1, 1, 8)
    body = layer_norm_chain(x, relay.const(g), relay.const(b), square)
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    out = api.rewrite_layer_norm(mod)
    call = out["main"].body
    assert call.op.name == "nn.layer_norm"
    assert call.attrs.epsilon == pytest.approx(1e-6)
    xv = rand(2, 3, 8)
    mean = xv.mean(-1, keepdims=True)
    ref = (xv - mean) / np.sqrt(((xv - mean) ** 2).mean(-1, keepdims=True) + 1e-6) * g + b[0, 0]
    np.testing.assert_allclose(run_host(out, x=xv), ref, rtol=1e-4, atol=1e-5)


def test_rewrite_layer_norm_leaves_other_axes_alone():
    x = relay.var("x", shape=(4, 8))
    mu = relay.mean(x, axis=0, keepdims=True)
    d = x - mu
    body = d / relay.sqrt(relay.mean(d * d, axis=0, keepdims=True) + relay.const(1e-5))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    assert api.rewrite_layer_norm(mod)["main"].body.op.name == "divide"


def gelu(x: relay.Expr) -> relay.Expr:
    erf = relay.erf(relay.divide(x, relay.const(math.sqrt(2.0))))
    return relay.multiply(relay.multiply(x, relay.add(erf, relay.const(1.0))), relay.const(0.5))


@pytest.mark.parametrize("act", [None, "gelu"])
def test_rewrite_dense_bias_gelu_reshape_last_moves_the_reshape_after(act):
    x = relay.var("x", shape=(2, 16))
    w, b = rand(32, 16), rand(32)
    y = relay.reshape(relay.nn.dense(x, relay.const(w)), (1, 2, 32)) + relay.const(b)
    if act:
        y = gelu(y)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    out = api.rewrite_dense_bias_gelu_reshape_last(mod)
    assert out["main"].body.op.name == "reshape"
    xv = rand(2, 16)
    ref = xv @ w.T + b
    if act:
        erf = np.vectorize(math.erf)
        ref = 0.5 * ref * (1 + erf(ref / math.sqrt(2.0)))
    np.testing.assert_allclose(
        run_host(out, x=xv), ref.reshape(1, 2, 32).astype("float32"), rtol=1e-4, atol=1e-5
    )


def test_layout_hooks_keep_the_graph_and_answer_plain_layouts():
    x = relay.var("x", shape=(1, 4, 8, 8))
    conv = relay.nn.conv2d(x, relay.var("w", shape=(4, 1, 3, 3)), groups=4)
    assert api.legalize_group_conv(conv.attrs, conv.args, None) is None
    assert api.alter_conv(conv.attrs, conv.args, None, None) is None
    with pytest.raises(IRError, match="groups"):
        api.legalize_group_conv(relay.nn.relu(x).attrs, [x], None)
    assert api.get_optimal_layout_for_conv(
        "NCHW", "OIHW", (4, 1, 3, 3), (1, 4, 8, 8), (1, 1), (1, 1), (1, 1), 4, "float32"
    ) == ("NCHW,GOIHW,NCHW")
    assert api.get_optimal_layout_for_conv_transpose(
        "NCDHW", "IODHW", (4, 4, 3, 3, 3), None, None, None, None, None, 1, "float32"
    ) == ("NCDHW,IODHW,NCDHW")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    assert api.legalize_qnn_for_dnnl(mod) is mod


@needs_onednn
def test_prune_returns_light_regions_to_the_host():
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.const(rand(8, 4, 3, 3))
    heavy = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)))
    cut = relay.cast(relay.cast(heavy, "int32"), "float32")  # host-only: splits regions
    light = relay.nn.relu(relay.tanh(cut))
    mod = tvm.IRModule.from_expr(relay.Function([x], light))
    parted = dnnl_pkg.partition_for_dnnl(mod)
    assert len([g for g in parted.get_global_vars() if "dnnl" in g.name_hint]) == 2
    pruned = api.prune_dnnl_subgraphs(parted)
    names = [g.name_hint for g in pruned.get_global_vars() if "dnnl" in g.name_hint]
    assert len(names) == 1
    assert "nn.conv2d" in pruned[names[0]].astext()
    xv = rand(1, 4, 6, 6)
    np.testing.assert_allclose(run_host(pruned, x=xv), run_host(mod, x=xv), rtol=1e-4, atol=1e-5)


def test_runtime_create_is_found_exactly_when_onednn_is():
    found = tvm.get_global_func("runtime.DNNLJSONRuntimeCreate", True)
    assert (found is not None) == dnnl_pkg.is_available()


@needs_onednn
def test_runtime_create_builds_a_module_that_runs_the_function():
    create = tvm.get_global_func("runtime.DNNLJSONRuntimeCreate")
    a = relay.var("a", shape=(2, 3))
    fn = relay.Function([a], relay.nn.relu(a * relay.const(2.0)))
    module = create("my_region", fn, [])
    assert module.implements_function("my_region", query_imports=True)
    with pytest.raises(IRError, match="Relay function"):
        create("x", "{}", [])
