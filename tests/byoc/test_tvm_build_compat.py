"""TVM's BYOC build semantics: inline external functions, constants the library carries,
parameter bytes, ``AnnotateTarget`` on calls of function values, and ``FuseOps``."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import PartitionError
from relaykit.byoc.lift import lift_external_functions
from relaykit.contrib import graph_executor
from relaykit.errors import ExecutorUsageError
from relaykit.runtime import load_param_dict, save_param_dict
from relaykit.transform.fuse_ops import FuseOps

# Loaded here, outside the per-test registry scopes (conftest), so that the backend's
# registration outlives the tests that first build for it.
ccompiler = pytest.importorskip("relaykit.backends.ccompiler")

RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.uniform(0.1, 1.0, shape).astype("float32")


def external(fn: relay.Function, compiler: str, symbol: str | None) -> relay.Function:
    fn = fn.with_attr("Primitive", tvm.tir.IntImm("int32", 1)).with_attr("Compiler", compiler)
    return fn if symbol is None else fn.with_attr("global_symbol", symbol)


def test_an_inline_external_function_runs_in_its_backend_with_its_constants():
    c = rand(4, 4)
    x0 = relay.var("x0", shape=(4, 4))
    f = external(relay.Function([x0], x0 * relay.const(c)), "ccompiler", "ccompiler_0")
    x = relay.var("x", shape=(4, 4))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.exp(relay.Call(f, [x]))))
    lifted = lift_external_functions(mod)
    assert sorted(gv.name_hint for gv in lifted.get_global_vars()) == ["ccompiler_0", "main"]
    assert lifted["ccompiler_0"].attrs["Primitive"] == 1
    assert type(lifted["ccompiler_0"].attrs["Primitive"]) is int

    factory = relay.build(mod, target="llvm")
    assert factory.get_params() == {}  # the constant lives in the backend's module
    plan_nodes = [n.kind for n in factory.plan.nodes]
    assert "extern" in plan_nodes
    m = graph_executor.create(factory.get_graph_json(), factory.get_lib(), tvm.cpu())
    xv = rand(4, 4)
    m.set_input("x", xv)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), np.exp(xv * c), rtol=1e-5)


def test_inline_external_functions_without_a_symbol_get_fresh_names():
    a = relay.var("a", shape=(2,))
    f = external(relay.Function([a], relay.abs(a)), "ccompiler", None)
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Call(f, [relay.Call(f, [x])])))
    lifted = lift_external_functions(mod)
    assert sorted(gv.name_hint for gv in lifted.get_global_vars()) == ["ccompiler_0", "main"]
    clash = external(relay.Function([a], relay.abs(a)), "ccompiler", "main")
    with pytest.raises(PartitionError, match="global_symbol 'main'"):
        lift_external_functions(tvm.IRModule.from_expr(relay.Function([x], clash(x))))


def test_scalar_constants_travel_with_the_library_larger_ones_are_parameters():
    x = relay.var("x", shape=(3,))
    out = relay.Tuple([x + relay.const(1.0), relay.Tuple([x * relay.const(2.0)])])
    graph, lib, _ = relay.build(tvm.IRModule.from_expr(relay.Function([x], out)), "llvm")
    m = graph_executor.create(graph, lib, tvm.cpu())
    xv = rand(3)
    m.run(x=xv)  # no set_input(**params): the scalars are in lib, as TVM's kernels hold them
    np.testing.assert_allclose(m.get_output(0).numpy(), xv + 1, rtol=1e-6)
    np.testing.assert_allclose(m.get_output(1).numpy(), xv * 2, rtol=1e-6)

    w = relay.const(rand(3))
    graph, lib, params = relay.build(relay.Function([x], x * w), "llvm")
    m = graph_executor.create(graph, lib, tvm.cpu())
    with pytest.raises(ExecutorUsageError, match="before parameter"):
        m.run(x=xv)
    m.load_params(save_param_dict(params))  # TVM's bytes form
    m.run(x=xv)
    np.testing.assert_allclose(m.get_output(0).numpy(), xv * w.data.numpy(), rtol=1e-6)


def test_an_input_nothing_reads_need_not_be_set():
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    graph, lib, _ = relay.build(relay.Function([x, y], relay.negative(y)), "llvm")
    m = graph_executor.create(graph, lib, tvm.cpu())
    with pytest.raises(ExecutorUsageError, match="input 'y'"):
        m.run()
    m.run(y=np.array([1.0, -2.0], "float32"))
    assert m.get_output(0).numpy().tolist() == [-1.0, 2.0]


def test_param_dict_bytes_round_trip_and_refuse_garbage():
    params = {"a": np.arange(6, dtype="int64").reshape(2, 3), "b": tvm.nd.array(rand(2))}
    back = load_param_dict(save_param_dict(params))
    np.testing.assert_array_equal(back["a"].numpy(), params["a"])
    np.testing.assert_array_equal(back["b"].numpy(), params["b"].numpy())
    x = relay.var("x", shape=(1,))
    lib = relay.build(relay.Function([x], relay.negative(x)))
    m = graph_executor.create(lib.get_graph_json(), lib.get_lib())
    with pytest.raises(ExecutorUsageError, match="save_param_dict"):
        m.load_params(b"not a parameter dict")


def test_annotate_target_leaves_calls_of_function_values_unannotated():
    target = "test_fn_values"
    with tvm.ir.default_registry.scoped():
        tvm.ir.register_op_attr("add", "target." + target, True)
        a = relay.var("a", shape=(2,))
        f = relay.var("f")
        x = relay.var("x", shape=(2,))
        body = relay.Let(f, relay.Function([a], a), relay.Call(f, [x + x]))
        mod = tvm.IRModule.from_expr(relay.Function([x], body))
        for non_call, expect_default in ((False, 0), (True, 2)):
            out = relay.transform.AnnotateTarget(target, non_call)(mod)
            text = out["main"].astext()
            assert text.count('compiler="default"') == expect_default, text
            assert (
                text.count(f'compiler_end(%2, compiler="{target}")')
                + text.count(f'compiler="{target}"')
                >= 3
            )


def _primitive_functions(mod: tvm.IRModule) -> list[list[str]]:
    """The operators of each Primitive function of main, in post-order."""
    out = []
    for node in tvm.ir.functor.post_order(mod["main"].body):
        if isinstance(node, relay.Function) and node.attrs.get("Primitive") == 1:
            ops = [
                n.op.name
                for n in tvm.ir.functor.post_order(node.body)
                if isinstance(n, relay.Call) and isinstance(n.op, tvm.ir.Op)
            ]
            out.append(ops)
    return out


def test_fuse_ops_groups_as_relay_does_and_computes_the_same():
    x = relay.var("x", shape=(1, 3, 6, 6))
    w = relay.const(rand(4, 3, 3, 3))
    b = relay.const(rand(4))
    conv = relay.nn.conv2d(x, w, padding=(1, 1))
    act = relay.nn.relu(relay.nn.bias_add(conv, b))
    flat = relay.reshape(act, (1, -1))
    out = relay.concatenate([relay.log(flat + relay.const(1.0)), relay.exp(flat)], axis=1)
    mod = tvm.IRModule.from_expr(relay.Function([x], out))
    fused = FuseOps(2)(mod)
    groups = _primitive_functions(fused)
    # conv absorbs bias_add and relu but not the (injective) reshape; the reshape, whose
    # two consumers meet at the tuple, joins the tuple's fields in the concatenate (TVM's
    # phase 2), scalar constant included.
    assert sorted(map(sorted, groups)) == sorted(
        map(
            sorted,
            [
                ["nn.conv2d", "nn.bias_add", "nn.relu"],
                ["reshape", "add", "log", "exp", "concatenate"],
            ],
        )
    )
    assert all(len(g) == 1 for g in _primitive_functions(FuseOps(0)(mod)))

    xv = rand(1, 3, 6, 6)
    lib = relay.build(fused, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(x=xv)
    # NumPy reference: conv2d (pad 1), bias, relu, then the two branches.
    wv, bv = w.data.numpy(), b.data.numpy()
    padded = np.pad(xv, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 4, 6, 6), "float32")
    for i in range(6):
        for j in range(6):
            patch = padded[0, :, i : i + 3, j : j + 3]
            ref[0, :, i, j] = np.tensordot(wv, patch, axes=([1, 2, 3], [0, 1, 2]))
    ref = np.maximum(ref + bv[None, :, None, None], 0).reshape(1, -1)
    ref = np.concatenate([np.log(ref + 1), np.exp(ref)], axis=1)
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-5)


def test_fuse_ops_keeps_external_and_global_calls_outside():
    a = relay.var("a", shape=(2, 2))
    f = external(relay.Function([a], relay.abs(a)), "ccompiler", "ccompiler_0")
    x = relay.var("x", shape=(2, 2))
    mod = lift_external_functions(
        tvm.IRModule.from_expr(relay.Function([x], relay.exp(relay.Call(f, [relay.negative(x)]))))
    )
    fused = FuseOps(2)(mod)
    assert sorted(_primitive_functions(fused)) == [["exp"], ["negative"]]
    assert fused["ccompiler_0"].body.op.name == "abs"  # the external function is untouched


def test_dnnl_residual_add_of_a_convolutions_own_input():
    # conv2 reads conv1's output; conv1 + conv2 must not accumulate into conv2's source.
    dnnl = pytest.importorskip("relaykit.backends.dnnl")
    if not dnnl.is_available():
        pytest.skip("oneDNN is not installed")
    partition_for_dnnl = dnnl.partition_for_dnnl

    wv = rand(8, 1, 3, 3)
    d = relay.var("d", shape=(1, 8, 6, 6))
    c1 = relay.nn.conv2d(d, relay.const(wv), padding=(1, 1), groups=8)
    c2 = relay.nn.conv2d(c1, relay.const(wv), padding=(1, 1), groups=8)
    mod = tvm.IRModule.from_expr(relay.Function([d], c1 + c2))
    dv = rand(1, 8, 6, 6)

    def depthwise(v: np.ndarray) -> np.ndarray:
        p = np.pad(v, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros_like(v)
        for i in range(6):
            for j in range(6):
                out[0, :, i, j] = (p[0, :, i : i + 3, j : j + 3] * wv[:, 0]).sum(axis=(1, 2))
        return out

    r1 = depthwise(dv)
    ref = r1 + depthwise(r1)
    lib = relay.build(partition_for_dnnl(mod), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(d=dv)
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-4)


def test_partition_graph_runs_a_registered_optimize_hook_on_each_region():
    seen = []

    def hook(mod: tvm.IRModule) -> tvm.IRModule:
        seen.append(dict(mod["main"].attrs.items()))
        return relay.transform.FoldConstant()(mod)

    tvm.register_func("relay.ext.hooked_target.optimize", hook, override=True)
    try:
        x = relay.var("x", shape=(2, 2))
        c = rand(2, 2)
        b0 = relay.annotation.compiler_begin(relay.const(c), "hooked_target")
        b1 = relay.annotation.compiler_begin(relay.const(c), "hooked_target")
        end = relay.annotation.compiler_end(b0 + b1, "hooked_target")
        mod = tvm.IRModule.from_expr(relay.Function([x], end * x))
        out = relay.transform.PartitionGraph()(mod)
    finally:
        tvm.runtime.registry.remove_global_func("relay.ext.hooked_target.optimize")
    assert seen == [{}]  # the region function, before its partitioning attributes
    (name,) = [g.name_hint for g in out.get_global_vars() if "hooked_target" in g.name_hint]
    region = out[name]
    assert region.attrs["Compiler"] == "hooked_target"
    assert isinstance(region.body, relay.Constant)
    np.testing.assert_allclose(region.body.data.numpy(), c + c, rtol=1e-6)


@pytest.mark.parametrize("kind", ["graph", "debug"])
def test_evaluate_ignores_keywords_naming_no_input(kind):
    # TVM scripts pass all parameters by keyword after binding some of them into the model.
    x, w = relay.var("x", shape=(2, 3)), relay.var("w", shape=(3,))
    wv, xv = rand(3), rand(2, 3)
    mod = tvm.IRModule.from_expr(relay.Function([x, w], x * w))
    mod["main"] = relay.build_module.bind_params_by_name(mod["main"], {"w": wv})
    f = relay.create_executor(kind, mod=mod, device=tvm.cpu(), target="llvm").evaluate()
    np.testing.assert_allclose(f(xv, w=wv).numpy(), xv * wv, rtol=1e-6)


def test_inline_keeps_a_backend_function_whole_at_its_call_site():
    x0 = relay.var("x0", shape=(2, 2))
    region = external(relay.Function([x0], x0 * x0), "ccompiler", "ccompiler_0")
    gv = relay.GlobalVar("ccompiler_0")
    mod = tvm.IRModule()
    mod[gv] = region.with_attr("Inline", tvm.tir.IntImm("int32", 1))
    x = relay.var("x", shape=(2, 2))
    mod["main"] = relay.Function([x], gv(x) + x)
    out = relay.transform.Inline()(mod)
    assert [g.name_hint for g in out.get_global_vars()] == ["main"]
    call = out["main"].body.args[0]
    assert isinstance(call.op, relay.Function) and call.op.attrs["Compiler"] == "ccompiler"
    xv = rand(2, 2)
    got = relay.create_executor("graph", mod=out, target="llvm").evaluate()(xv).numpy()
    np.testing.assert_allclose(got, xv * xv + xv, rtol=1e-5)


def test_merge_compiler_regions_merges_host_regions_as_tvm(byoc):
    byoc.supported("lib", "add")
    x, y = relay.var("x", shape=(2, 2)), relay.var("y", shape=(2, 2))
    h = relay.subtract(relay.subtract(x, y), y)  # two host operators in a row
    mod = tvm.IRModule.from_expr(relay.Function([x, y], relay.add(h, x)))
    merged = relay.transform.MergeCompilerRegions()(relay.transform.AnnotateTarget("lib")(mod))
    text = merged["main"].astext()
    # one default region around both subtracts: a single end/begin pair between them is gone
    assert text.count("compiler_end") == 2 and text.count('compiler="default"') == 4
    out = relay.transform.PartitionGraph()(merged)
    xv, yv = rand(2, 2), rand(2, 2)
    got = relay.create_executor("debug", mod=out).evaluate()(xv, yv).numpy()
    np.testing.assert_allclose(got, xv - 2 * yv + xv, rtol=1e-6)


def test_qnn_concatenate_requantizes_each_input_to_the_output_scale():
    a = np.array([[0, 10, 255]], "uint8")
    b = np.array([[4, 200, 7]], "uint8")
    av, bv = (
        relay.var("a", shape=(1, 3), dtype="uint8"),
        relay.var("b", shape=(1, 3), dtype="uint8"),
    )
    scale = [relay.const(0.5), relay.const(2.0)]
    zp = [relay.const(3, "int32"), relay.const(5, "int32")]
    y = relay.qnn.op.concatenate((av, bv), scale, zp, relay.const(1.5), relay.const(10, "int32"), 1)
    got = relay.create_executor("debug", mod=tvm.IRModule.from_expr(relay.Function([av, bv], y)))
    got = got.evaluate()(a, b).numpy()
    real = np.concatenate([0.5 * (a.astype(float) - 3), 2.0 * (b.astype(float) - 5)], axis=1)
    q = real / 1.5 + 10
    want = np.clip(np.sign(q) * np.floor(np.abs(q) + 0.5), 0, 255).astype("uint8")
    assert got.dtype == np.uint8 and got.shape == (1, 6)
    np.testing.assert_array_equal(got, want)


def test_an_annotation_takes_the_type_a_later_use_determines():
    # compiler_end around a call of a recursive let-bound function whose type only the
    # If around it determines (TVM's IdentityRel unifies input and output)
    var1 = relay.var("var1", shape=(2,))
    i = relay.var("i", shape=(), dtype="int32")
    acc = relay.var("acc", shape=(2,))
    loop = relay.var("loop")
    step = relay.annotation.compiler_end(loop(i + relay.const(1, "int32"), acc + var1), "default")
    body = relay.If(relay.less(i, relay.const(3, "int32")), step, acc)
    expr = relay.Let(loop, relay.Function([i, acc], body), loop(relay.const(0, "int32"), var1))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([var1], expr)))
    assert str(mod["main"].ret_type) == "Tensor[(2), float32]"
    xv = rand(2)
    got = relay.create_executor("debug", mod=mod).evaluate()(xv).numpy()
    np.testing.assert_allclose(got, 4 * xv, rtol=1e-6)
