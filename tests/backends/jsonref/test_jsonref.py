"""The jsonref JSON-graph backend: serialised regions, a runtime with its own kernels."""

import json

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends import jsonref
from relaykit.backends.jsonref import kernels
from relaykit.errors import ArtifactCorruptError, BackendExecutionError, ExecutionError
from relaykit.execution.codegen import JSONSerializer
from relaykit.runtime.json_runtime import JSONGraph

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def conv_net():
    x = relay.var("data", shape=(1, 3, 12, 12))
    y = relay.nn.conv2d(x, relay.const(rand(8, 3, 3, 3)), padding=(1, 1))
    y = relay.nn.relu(relay.nn.bias_add(y, relay.const(rand(8))))
    y = relay.nn.max_pool2d(y, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    y = relay.exp(y)  # not a jsonref op: splits the graph in two regions
    y = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(y))
    y = relay.nn.bias_add(relay.nn.dense(y, relay.const(rand(5, 8))), relay.const(rand(5)))
    return tvm.IRModule.from_expr(relay.Function([x], relay.nn.softmax(y)))


def test_regions_become_json_graphs_with_constants_as_arrays():
    mod = conv_net()
    part = jsonref.partition_for_jsonref(mod)
    lib = relay.build(part, target="llvm")
    runtimes = lib.lib.imported_modules
    assert [type(m).__name__ for m in runtimes] == ["JSONRefRuntime", "JSONRefRuntime"]
    first = json.loads(runtimes[0].graph_json)
    kinds = [(n["op"], n["name"]) for n in first["nodes"]]
    assert ("kernel", "jsonref.conv2d_bias_relu") in kinds
    assert ("kernel", "nn.max_pool2d") in kinds
    conv = next(n for n in first["nodes"] if n["name"] == "jsonref.conv2d_bias_relu")
    assert [b["op"] for b in conv["body"]] == ["nn.conv2d", "nn.bias_add", "nn.relu"]
    assert conv["body"][0]["attrs"]["padding"] == [1, 1, 1, 1]
    # The weights are arrays of the module, not JSON numbers.
    assert len(runtimes[0].graph_json) < 4000
    assert sorted(a.shape for a in runtimes[0].constants.values()) == [(8,), (8, 3, 3, 3)]
    data = rand(1, 3, 12, 12)
    ref = relay.create_executor("debug", mod=mod).evaluate()(data).numpy()
    out = relay.create_executor("graph", mod=part).evaluate()(data).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_the_graph_is_parsed_once_and_kernels_bound_once(monkeypatch):
    part = jsonref.partition_for_jsonref(conv_net())
    parses, binds, runs = [], [], []
    real_parse = JSONGraph.parse
    monkeypatch.setattr(
        JSONGraph, "parse", staticmethod(lambda t: parses.append(1) or real_parse(t))
    )
    real = kernels.KERNELS["nn.max_pool2d"]

    def counting(node, ins, outs):
        binds.append(1)
        run = real(node, ins, outs)
        return lambda: runs.append(1) or run()

    monkeypatch.setitem(kernels.KERNELS, "nn.max_pool2d", counting)
    lib = relay.build(part, target="llvm")
    ex = lib["default"](tvm.cpu())
    for _ in range(3):
        ex.run(data=rand(1, 3, 12, 12))
    assert len(parses) == 2  # one per region, at codegen
    assert len(binds) == 1 and len(runs) == 3


@pytest.mark.parametrize("name", ["mlp", "vgg11", "resnet18"])
def test_workloads_match_the_interpreter(models, name):
    mod, params, data = models.workload(name)
    lib = relay.build(jsonref.partition_for_jsonref(mod, params), target="llvm")
    (runtime,) = lib.lib.imported_modules  # every op of these models is offloaded
    assert type(runtime).__name__ == "JSONRefRuntime"
    np.testing.assert_allclose(models.run(lib, data), models.reference(name), rtol=1e-5, atol=1e-6)


def test_runtime_module_is_callable_on_its_own():
    part = jsonref.partition_for_jsonref(conv_net())
    lib = relay.build(part, target="llvm")
    rt = lib.lib.imported_modules[0]
    fn = rt[rt.symbol]
    x = rand(1, 3, 12, 12)
    out = fn(x)
    assert out.shape == (1, 8, 6, 6)
    with pytest.raises(
        ExecutionError, match=r"input 0 of function .* must be float32\[1, 3, 12, 12\]"
    ):
        fn(x[:, :, :6])


def test_error_inside_a_backend_function_names_function_backend_and_ops(monkeypatch):
    def broken(node, ins, outs):
        def run():
            raise FloatingPointError("kernel exploded")

        return run

    monkeypatch.setitem(kernels.KERNELS, "nn.max_pool2d", broken)
    part = jsonref.partition_for_jsonref(conv_net())
    run = relay.create_executor("graph", mod=part).evaluate()
    with pytest.raises(BackendExecutionError) as info:
        run(rand(1, 3, 12, 12))
    msg = str(info.value)
    assert "function tvmgen_default_jsonref_main_0 of backend 'jsonref'" in msg
    assert "jsonref.conv2d_bias_relu(nn.conv2d, nn.bias_add, nn.relu), nn.max_pool2d" in msg
    assert "FloatingPointError: kernel exploded" in msg


def test_missing_kernel_is_reported_when_the_module_is_created():
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], relay.exp(x)).with_attr("global_symbol", "f")
    tvm.transform.infer_type(f)
    graph, consts = JSONSerializer().serialize(f, "f")
    with pytest.raises(ExecutionError, match=r"no kernel for 'exp' \(node 1 of f\)"):
        jsonref.JSONRefRuntime("f", json.dumps(graph), consts)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda g: g.update(version=7), "version 7"),
        (lambda g: g["nodes"][1].update(inputs=[[5, 0]]), "not defined before it"),
        (lambda g: g.update(heads=[[9, 0]]), "head"),
        (lambda g: g["nodes"][1].update(op="python"), "unknown kind"),
    ],
)
def test_malformed_json_graphs_are_typed_errors(mutate, message):
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], relay.nn.relu(x))
    tvm.transform.infer_type(f)
    graph, consts = JSONSerializer().serialize(f, "f")
    mutate(graph)
    with pytest.raises(ArtifactCorruptError, match=message):
        jsonref.JSONRefRuntime("f", json.dumps(graph), consts)


def test_region_with_tuple_outputs_and_pass_through():
    p = relay.var("p", shape=(1, 4))
    symbol = "tvmgen_default_jsonref_main_0"
    r = relay.nn.relu(p)
    region = relay.Function([p], relay.Tuple([r, p, r])).with_attrs(
        {"Compiler": "jsonref", "global_symbol": symbol, "Primitive": 1, "Inline": 1}
    )
    mod = tvm.IRModule()
    gv = relay.GlobalVar(symbol)
    mod[gv] = region
    x = relay.var("x", shape=(1, 4))
    t = gv(x)
    t0, t1, t2 = (relay.TupleGetItem(t, i) for i in range(3))
    mod["main"] = relay.Function([x], relay.add(relay.add(t0, t1), t2))
    data = np.array([[-1, 2, -3, 4]], "float32")
    out = relay.create_executor("graph", mod=mod).evaluate()(data).numpy()
    np.testing.assert_array_equal(out, 2 * np.maximum(data, 0) + data)


def test_loaded_modules_export_again(models, tmp_path):
    mod, params, data = models.workload("mlp")
    lib = relay.build(jsonref.partition_for_jsonref(mod, params), target="llvm")
    lib.export_library(str(tmp_path / "a.rkmod"))
    again = tvm.runtime.load_module(str(tmp_path / "a.rkmod"))
    again.export_library(str(tmp_path / "b.rkmod"))
    final = tvm.runtime.load_module(str(tmp_path / "b.rkmod"))
    np.testing.assert_array_equal(models.run(final, data), models.run(lib, data))
