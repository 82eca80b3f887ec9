"""Epilogue fusion in the graph executor (backend/host_fusion.py): a convolution or dense
layer and the bias, residual and clamp nodes after it run as one step, with the same
results as NumPy computations in float64; chains that cannot fuse run node by node."""

import contextlib
import json
import threading

import numpy as np
import pytest
from scipy import signal

import relaykit as tvm
from relaykit import relay
from relaykit.backends.host import conv as host_conv
from relaykit.backends.host import native as host_native
from relaykit.errors import ArtifactCorruptError, ExecutionError
from relaykit.execution import fusion as host_fusion
from relaykit.execution.build_module import GraphExecutorFactoryModule
from relaykit.execution.graph_executor import GraphExecutor
from relaykit.execution.graph_plan import GraphPlan

RNG = np.random.default_rng(3)
native = pytest.mark.skipif(
    host_conv.kernels() is None, reason="no C compiler: the native kernels are unavailable"
)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


@pytest.fixture(params=["native", "numpy"])
def path(request):
    """Each model runs fused (native kernels) and node by node (NumPy)."""
    if request.param == "native" and host_conv.kernels() is None:
        pytest.skip("no C compiler: the native kernels are unavailable")
    ctx = contextlib.nullcontext() if request.param == "native" else host_native.disabled()
    with ctx:
        yield request.param


def pvars(params):
    return [relay.var(k, shape=v.shape, dtype="float32") for k, v in params.items()]


def build(out, params, inputs):
    func = relay.Function(relay.analysis.free_vars(out), out)
    lib = relay.build(tvm.IRModule.from_expr(func), target="llvm", params=params)
    ex = lib["default"](tvm.cpu())
    assert isinstance(ex, GraphExecutor)
    for name, value in inputs.items():
        ex.set_input(name, value)
    ex.run()
    return ex


def conv_ref(x, w, groups=1, pad=0, stride=1):
    """NCHW/OIHW convolution in float64 with scipy's correlate."""
    x, w = x.astype("f8"), w.astype("f8")
    n = x.shape[0]
    oc, cg = w.shape[:2]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = []
    for i in range(n):
        chans = []
        for o in range(oc):
            g = o // (oc // groups)
            acc = sum(
                signal.correlate2d(xp[i, g * cg + j], w[o, j], mode="valid") for j in range(cg)
            )
            chans.append(acc[::stride, ::stride])
        out.append(chans)
    return np.array(out)


def test_mobilenet_block_fuses_and_matches(path):
    """expand 1x1 + bias + relu6, depthwise 3x3 + bias + relu6, project 1x1 + bias +
    residual: three steps when fused."""
    p = {"w1": rand(48, 8, 1, 1), "b1": rand(48), "w2": rand(48, 1, 3, 3), "b2": rand(48),
         "w3": rand(8, 48, 1, 1), "b3": rand(8)}  # fmt: skip
    x = relay.var("x", shape=(1, 8, 10, 10))
    w1, b1, w2, b2, w3, b3 = pvars(p)
    h = relay.clip(relay.nn.bias_add(relay.nn.conv2d(x, w1, kernel_size=(1, 1)), b1), 0.0, 6.0)
    h = relay.nn.conv2d(h, w2, kernel_size=(3, 3), padding=(1, 1), groups=48, channels=48)
    h = relay.clip(relay.nn.bias_add(h, b2), 0.0, 6.0)
    out = relay.add(relay.nn.bias_add(relay.nn.conv2d(h, w3, kernel_size=(1, 1)), b3), x)
    xv = rand(1, 8, 10, 10)
    ex = build(out, p, {"x": xv})
    h = np.clip(conv_ref(xv, p["w1"]) + p["b1"][:, None, None], 0, 6)
    h = np.clip(conv_ref(h, p["w2"], groups=48, pad=1) + p["b2"][:, None, None], 0, 6)
    want = conv_ref(h, p["w3"]) + p["b3"][:, None, None] + xv
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
    assert ex.num_steps == (3 if path == "native" else 9)


def test_strided_conv_with_constant_add_and_relu(path):
    p = {"w": rand(5, 3, 3, 3), "c": rand(5, 1, 1)}
    x = relay.var("x", shape=(2, 3, 13, 11))
    w, c = pvars(p)
    y = relay.nn.relu(relay.add(relay.nn.conv2d(x, w, strides=(2, 2), padding=(1, 1)), c))
    xv = rand(2, 3, 13, 11)
    ex = build(y, p, {"x": xv})
    want = np.maximum(conv_ref(xv, p["w"], pad=1, stride=2) + p["c"], 0)
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
    assert ex.num_steps == (1 if path == "native" else 3)


def test_dense_through_reshapes_with_bias_and_residual(path):
    """ONNX MatMul + Add on 3-D input: reshape, dense, reshape, add of a [N] constant (first
    argument), add of the residual."""
    p = {"w": rand(16, 16), "b": rand(16)}
    x = relay.var("x", shape=(2, 8, 16))
    w, b = pvars(p)
    h = relay.reshape(relay.nn.dense(relay.reshape(x, (-1, 16)), w), (2, 8, 16))
    out = relay.add(relay.add(b, h), x)
    xv = rand(2, 8, 16)
    ex = build(out, p, {"x": xv})
    want = xv.astype("f8") @ p["w"].T.astype("f8") + p["b"] + xv
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
    assert ex.num_steps == (1 if path == "native" else 3)


def test_big_dense_in_blocks_with_bias_on_threads(path):
    p = {"w": rand(512, 256), "b": rand(512)}
    x = relay.var("x", shape=(64, 256))
    w, b = pvars(p)
    out = relay.clip(relay.nn.bias_add(relay.nn.dense(x, w), b, axis=-1), -1.0, 1.0)
    xv = rand(64, 256)
    ex = build(out, p, {"x": xv})
    want = np.clip(xv.astype("f8") @ p["w"].T + p["b"], -1, 1)
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


def test_an_intermediate_read_twice_or_returned_is_not_fused(path):
    p = {"w": rand(4, 4, 1, 1), "b": rand(4)}
    x = relay.var("x", shape=(1, 4, 6, 6))
    w, b = pvars(p)
    conv = relay.nn.conv2d(x, w, kernel_size=(1, 1))
    biased = relay.nn.bias_add(conv, b)
    out = relay.Tuple([relay.clip(biased, 0.0, 6.0), biased])  # biased is an output
    xv = rand(1, 4, 6, 6)
    ex = build(out, p, {"x": xv})
    biased_want = conv_ref(xv, p["w"]) + p["b"][:, None, None]
    np.testing.assert_allclose(ex.get_output(1).numpy(), biased_want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ex.get_output(0).numpy(), np.clip(biased_want, 0, 6), rtol=1e-4)
    # conv + bias_add fuse; the clip reads an output, so it stays a step of its own
    assert ex.num_steps == (2 if path == "native" else 3)


def test_disjoint_clamps_end_the_chain(path):
    p = {"w": rand(4, 5)}
    x = relay.var("x", shape=(3, 5))
    (w,) = pvars(p)
    out = relay.clip(relay.clip(relay.nn.dense(x, w), 0.0, 1.0), 2.0, 3.0)
    xv = rand(3, 5)
    ex = build(out, p, {"x": xv})
    want = np.clip(np.clip(xv.astype("f8") @ p["w"].T, 0, 1), 2, 3)
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-5)


@native
def test_errors_of_a_fused_step_name_the_producer_and_its_epilogue(monkeypatch):
    real = host_fusion.bind_group

    def failing(*args):
        run = real(*args)
        if run is None:
            return None

        def boom():
            raise ValueError("kernel failed")

        return boom

    monkeypatch.setattr(host_fusion, "bind_group", failing)
    p = {"w": rand(4, 4, 1, 1), "b": rand(4)}
    x = relay.var("x", shape=(1, 4, 6, 6))
    w, b = pvars(p)
    out = relay.clip(relay.nn.bias_add(relay.nn.conv2d(x, w, kernel_size=(1, 1)), b), 0.0, 6.0)
    with pytest.raises(ExecutionError, match=r"nn\.conv2d.*fused with nn\.bias_add, clip.*failed"):
        build(out, p, {"x": rand(1, 4, 6, 6)})


@pytest.mark.parametrize("residual_first", [False, True])
@pytest.mark.parametrize("depthwise", [False, True])
def test_residual_whose_buffer_the_output_reuses(path, depthwise, residual_first):
    """The residual is an intermediate that dies at the add, so the memory plan puts the sum
    in its buffer (when it is the add's first argument): the producer must not write there
    before the epilogue has read it."""
    c = 6
    p = {"w": rand(c, 1 if depthwise else c, 3 if depthwise else 1, 3 if depthwise else 1),
         "b": rand(c)}  # fmt: skip
    x = relay.var("x", shape=(1, c, 7, 7))
    w, b = pvars(p)
    h = relay.nn.relu(x)  # an intermediate, read by the conv and the residual add
    if depthwise:
        conv = relay.nn.conv2d(h, w, kernel_size=(3, 3), padding=(1, 1), groups=c, channels=c)
    else:
        conv = relay.nn.conv2d(h, w, kernel_size=(1, 1))
    biased = relay.nn.bias_add(conv, b)
    out = relay.add(h, biased) if residual_first else relay.add(biased, h)
    xv = rand(1, c, 7, 7)
    ex = build(out, p, {"x": xv})
    hv = np.maximum(xv, 0)
    want = conv_ref(hv, p["w"], groups=c if depthwise else 1, pad=1 if depthwise else 0)
    want = want + p["b"][:, None, None] + hv
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
    ex.run()  # again: nothing the first run wrote changes the second
    np.testing.assert_allclose(ex.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
    fused = path == "native" and not (depthwise and residual_first)
    assert ex.num_steps == (2 if fused else 4)


@native
def test_every_thread_binds_the_kernels_the_executor_chose():
    """An executor made with native kernels, run first from a thread that has them
    switched off, still runs its fused native steps there (with the scratch it measured)."""
    p = {"w": rand(32, 1, 3, 3), "b": rand(32)}
    x = relay.var("x", shape=(1, 32, 20, 20))
    w, b = pvars(p)
    y = relay.nn.conv2d(x, w, kernel_size=(3, 3), padding=(1, 1), groups=32, channels=32)
    y = relay.clip(relay.nn.bias_add(y, b), 0.0, 6.0)
    xv = rand(1, 32, 20, 20)
    ex = build(y, p, {"x": xv})
    want = np.clip(conv_ref(xv, p["w"], groups=32, pad=1) + p["b"][:, None, None], 0, 6)
    got = {}

    def other_thread():
        with host_native.disabled():
            ex.set_input("x", xv)
            ex.run()
            got["y"] = ex.get_output(0).numpy()

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=1e-4)
    assert ex.num_steps == 1


def _conv_bias_relu():
    p = {"w": rand(4, 3, 3, 3), "b": rand(4)}
    x = relay.var("x", shape=(1, 3, 8, 8))
    w, b = pvars(p)
    out = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
    func = relay.Function(relay.analysis.free_vars(out), out)
    return relay.build(tvm.IRModule.from_expr(func), target="llvm", params=p)


def _no_planning(monkeypatch):
    def planned_again(plan):
        raise AssertionError("the fusion was planned again")

    monkeypatch.setattr(host_fusion, "plan_fusion", planned_again)


def test_fusion_is_planned_at_build_and_stored_in_the_plan(tmp_path, monkeypatch):
    lib = _conv_bias_relu()
    groups = lib.plan.fusion
    assert [g.names for g in groups.values()] == [("nn.bias_add", "nn.relu")]
    assert GraphPlan.from_json(lib.plan.to_json()).fusion == groups
    lib.export_library(str(tmp_path / "m.rkmod"))
    _no_planning(monkeypatch)  # executors and a loaded artifact reuse the stored groups
    lib["default"](tvm.cpu())
    loaded = tvm.runtime.load_module(str(tmp_path / "m.rkmod"))
    assert loaded.plan.fusion == groups
    loaded["default"](tvm.cpu())


def test_an_artifact_without_stored_fusion_plans_it_at_load():
    lib = _conv_bias_relu()
    blob = lib.save_blob()
    obj = json.loads(blob.files["graph.json"])
    del obj["fusion"]
    blob.files["graph.json"] = json.dumps(obj).encode()
    loaded = GraphExecutorFactoryModule.load_blob(blob)
    assert loaded.plan.fusion == lib.plan.fusion


def test_a_stored_group_that_does_not_fit_the_plan_is_a_corrupt_artifact():
    obj = json.loads(_conv_bias_relu().plan.to_json())
    obj["fusion"][0]["members"] = [0]
    with pytest.raises(ArtifactCorruptError, match="members must follow it"):
        GraphPlan.from_json(json.dumps(obj))


def test_executors_without_native_kernels_ignore_the_stored_fusion():
    lib = _conv_bias_relu()
    with host_native.disabled():
        ex = lib["default"](tvm.cpu())
    assert ex._fusion == {}
    assert lib.plan.fusion
