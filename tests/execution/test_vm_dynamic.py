"""The Relay VM on dynamic models: one compiled artifact for any batch, and
partitioned dynamic models whose static regions run on oneDNN.

Every expected value is computed independently with NumPy (the interpreter is
compared too, as a second opinion, never as the only reference).
"""

import shutil

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler, dnnl
from relaykit.errors import ExecutionError
from relaykit.relay.loops import while_loop
from relaykit.runtime.vm import VirtualMachine

RNG = np.random.default_rng(12)

needs_dnnl = pytest.mark.skipif(not dnnl.is_available(), reason="oneDNN is not installed")


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype("float32")


def conv2d_nchw(x, w, pad):
    """Direct NumPy convolution (stride 1), independent of relaykit's kernels."""
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, o, oh, ow), "float64")
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + oh, j : j + ow]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out.astype("float32")


def primitive_kinds(exe):
    return [p.kind for p in exe.mod.primitives]


def export_and_load(exe, tmp_path, name):
    path = str(tmp_path / name)
    exe.mod.export_library(path)
    return VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())


def test_dynamic_batch_cnn_runs_batch_1_3_8_from_one_artifact(tmp_path):
    x = relay.var("x", shape=(relay.Any(), 3, 6, 6))
    w, wd = rand(4, 3, 3, 3, scale=0.3), rand(10, 36, scale=0.1)
    y = relay.nn.relu(relay.nn.conv2d(x, relay.const(w), padding=(1, 1)))
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))
    out = relay.nn.softmax(relay.nn.dense(relay.nn.batch_flatten(y), relay.const(wd)))
    mod = tvm.IRModule.from_expr(relay.Function([x], out))
    vm = export_and_load(relay.vm.compile(mod, target="llvm"), tmp_path, "cnn.rkmod")
    interp = relay.create_executor("debug", mod=mod).evaluate()
    for batch in (1, 3, 8):
        data = rand(batch, 3, 6, 6)
        c = np.maximum(conv2d_nchw(data, w, 1), 0)
        p = c.reshape(batch, 4, 3, 2, 3, 2).max(axis=(3, 5))
        z = p.reshape(batch, -1) @ wd.T
        e = np.exp(z - z.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True)
        got = vm.invoke("main", data).numpy()
        assert got.shape == (batch, 10)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got, interp(data).numpy(), rtol=1e-5, atol=1e-6)


def test_dynamic_batch_artifact_rejects_a_wrong_static_dim_naming_operator_and_shapes(tmp_path):
    x = relay.var("x", shape=(relay.Any(), 8))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.dense(x, relay.const(rand(4, 8)))))
    vm = export_and_load(relay.vm.compile(mod, target="llvm"), tmp_path, "dense.rkmod")
    assert vm.invoke("main", rand(5, 8)).numpy().shape == (5, 4)
    with pytest.raises(ExecutionError, match=r"nn\.dense.*\(5, 7\).*\?, 8"):
        vm.invoke("main", rand(5, 7))


def test_dnnl_declines_operators_with_dynamic_shapes():
    x = relay.var("x", shape=(relay.Any(), 8))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    call = relay.transform.InferType()(mod)["main"].body
    verdict = dnnl.check_call(call)
    assert not verdict
    assert "dynamic shape" in str(verdict)


@needs_dnnl
def test_partitioned_dynamic_model_offloads_its_static_region_to_dnnl(tmp_path):
    # A static image encoder (conv + relu + dense) feeds a dynamic batch of queries.
    img = relay.var("img", shape=(1, 3, 8, 8))
    q = relay.var("q", shape=(relay.Any(), 16))
    w, wd, wq = rand(4, 3, 3, 3, scale=0.3), rand(16, 256, scale=0.1), rand(5, 16)
    enc = relay.nn.relu(relay.nn.conv2d(img, relay.const(w), padding=(1, 1)))
    emb = relay.nn.dense(relay.nn.batch_flatten(enc), relay.const(wd))
    out = relay.nn.dense(relay.tanh(q + emb), relay.const(wq))
    mod = tvm.IRModule.from_expr(relay.Function([img, q], out))
    pmod = dnnl.partition_for_dnnl(mod)
    regions = [gv for gv in pmod.get_global_vars() if gv.name_hint != "main"]
    assert len(regions) == 1
    region = pmod[regions[0]]
    assert region.attrs["Compiler"] == "dnnl"
    assert all(isinstance(d, int) for p in region.params for d in p.checked_type.shape)
    exe = relay.vm.compile(pmod, target="llvm")
    assert primitive_kinds(exe).count("extern") == 1
    vm = export_and_load(exe, tmp_path, "dyn_dnnl.rkmod")
    iv = rand(1, 3, 8, 8)
    e = np.maximum(conv2d_nchw(iv, w, 1), 0).reshape(1, -1) @ wd.T
    for batch in (1, 3, 8):
        qv = rand(batch, 16)
        got = vm.invoke("main", iv, qv).numpy()
        np.testing.assert_allclose(got, np.tanh(qv + e) @ wq.T, rtol=1e-4, atol=1e-5)


@needs_dnnl
def test_loop_with_a_static_body_runs_its_body_on_dnnl_each_iteration():
    # The trip count is a run-time input; the loop body is a static conv + relu.
    w = rand(4, 4, 3, 3, scale=0.2)
    n = relay.var("n", shape=(), dtype="int32")
    x = relay.var("x", shape=(1, 4, 8, 8))
    i = relay.var("i", shape=(), dtype="int32")
    s = relay.var("s", shape=(1, 4, 8, 8))
    loop = while_loop(
        lambda i, s: relay.less(i, n),
        [i, s],
        lambda i, s: [
            i + relay.const(1),
            relay.nn.relu(relay.nn.conv2d(s, relay.const(w), padding=(1, 1))),
        ],
    )
    mod = tvm.IRModule.from_expr(
        relay.Function([n, x], relay.TupleGetItem(loop(relay.const(0), x), 1))
    )
    pmod = dnnl.partition_for_dnnl(mod)
    exe = relay.vm.compile(pmod, target="llvm")
    assert primitive_kinds(exe).count("extern") == 1
    vm = VirtualMachine(exe, tvm.cpu())
    xv = rand(1, 4, 8, 8)
    for steps in (0, 1, 3):
        want = xv
        for _ in range(steps):
            want = np.maximum(conv2d_nchw(want, w, 1), 0)
        got = vm.invoke("main", np.array(steps, "int32"), xv).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_without_dnnl_the_dynamic_model_still_runs_on_the_host():
    # The same dynamic model, unpartitioned: every operator is an ordinary VM primitive.
    q = relay.var("q", shape=(relay.Any(), 16))
    wq = rand(5, 16)
    mod = tvm.IRModule.from_expr(
        relay.Function([q], relay.nn.dense(relay.tanh(q), relay.const(wq)))
    )
    exe = relay.vm.compile(mod, target="llvm")
    assert "extern" not in primitive_kinds(exe)
    qv = rand(3, 16)
    got = VirtualMachine(exe, tvm.cpu()).invoke("main", qv).numpy()
    np.testing.assert_allclose(got, np.tanh(qv) @ wq.T, rtol=1e-5, atol=1e-5)


def dynamic_mlp():
    x = relay.var("x", shape=(relay.Any(), 6))
    w1, b1, w2 = rand(8, 6), rand(8), rand(3, 8)
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, relay.const(w1)), relay.const(b1)))
    out = relay.nn.dense(h, relay.const(w2)) * relay.const(2.0)
    mod = tvm.IRModule.from_expr(relay.Function([x], out))

    def ref(data):
        return 2 * (np.maximum(data @ w1.T + b1, 0) @ w2.T)

    return mod, ref


def test_dynamic_intermediates_are_frame_owned_and_results_stay_fresh():
    mod, ref = dynamic_mlp()
    exe = relay.vm.compile(mod, target="llvm")
    assert "planned dynamic" in exe.bytecode
    vm = VirtualMachine(exe, tvm.cpu())
    inputs = [rand(b, 6) for b in (2, 5, 2, 1, 5)]
    outs = [vm.invoke("main", x).numpy() for x in inputs]
    # Every earlier result is intact after later runs, at the same and other batches.
    for x, got in zip(inputs, outs, strict=True):
        np.testing.assert_allclose(got, ref(x), rtol=1e-5, atol=1e-5)
    # The same input array, changed in place between runs.
    x = rand(4, 6)
    first = vm.invoke("main", x).numpy().copy()
    x += 1.0
    np.testing.assert_allclose(vm.invoke("main", x).numpy(), ref(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(first, ref(x - 1.0), rtol=1e-5, atol=1e-5)


def test_dynamic_module_is_optimised_batch_norm_folded():
    x = relay.var("x", shape=(relay.Any(), 3, 4, 4))
    w = rand(2, 3, 1, 1)
    gamma, beta, mean = rand(2), rand(2), rand(2)
    var = np.abs(rand(2)) + 0.5
    y = relay.nn.conv2d(x, relay.const(w))
    y = relay.nn.batch_norm(
        y, relay.const(gamma), relay.const(beta), relay.const(mean), relay.const(var)
    )[0]
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(y)))
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm")
    assert "nn.batch_norm" not in exe.primitive_ops
    data = rand(3, 3, 4, 4)
    conv = np.einsum("nchw,oc->nohw", data, w[:, :, 0, 0])
    scale = gamma / np.sqrt(var + 1e-5)
    want = np.maximum((conv - mean[:, None, None]) * scale[:, None, None] + beta[:, None, None], 0)
    got = VirtualMachine(exe, tvm.cpu()).invoke("main", data).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_ccompiler_partition_of_a_dynamic_model_offloads_only_its_static_region():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    s = relay.var("s", shape=(1, 4))
    q = relay.var("q", shape=(relay.Any(), 4))
    static = relay.tanh(relay.add(s, s) * s)  # a static region
    out = relay.subtract(q * static, q)  # dynamic: on the VM's host kernels
    mod = ccompiler.partition_for_ccompiler(tvm.IRModule.from_expr(relay.Function([s, q], out)))
    exe = relay.vm.compile(mod, target="llvm")
    assert primitive_kinds(exe).count("extern") == 1
    vm = VirtualMachine(exe, tvm.cpu())
    sv = rand(1, 4)
    for batch in (1, 5):
        qv = rand(batch, 4)
        want = qv * np.tanh((sv + sv) * sv) - qv
        np.testing.assert_allclose(vm.invoke("main", sv, qv).numpy(), want, rtol=1e-5, atol=1e-6)


def test_reshapes_with_one_dynamic_dimension_are_one_view():
    x = relay.var("x", shape=(relay.Any(), 16))
    y = relay.reshape(relay.reshape(x, [-1, 4]), [0, 2, -1])
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(y)))
    exe = relay.vm.compile(mod, target="llvm")
    assert exe.bytecode.count("reshape_tensor") == 1
    vm = VirtualMachine(exe, tvm.cpu())
    for rows in (1, 3, 8, 3):
        xv = rand(rows, 16)
        got = vm.invoke("main", xv).numpy()
        np.testing.assert_array_equal(got, np.maximum(xv.reshape(rows * 4, 2, 2), 0))


def test_dyn_reshape_is_a_shape_function_then_a_reshape_tensor_view(tmp_path):
    x = relay.var("x", shape=(8, 16))
    s = relay.var("s", shape=(3,), dtype="int32")
    y = relay.reshape(relay.reshape(x, [-1, 4, 8]), s)
    mod = tvm.IRModule.from_expr(relay.Function([x, s], relay.exp(y)))
    exe = relay.vm.compile(mod, target="llvm")
    assert exe.bytecode.count("reshape_tensor") == 2
    vm = export_and_load(exe, tmp_path, "dynreshape.rkmod")
    xv = rand(8, 16)
    for shape in ([8, 2, 8], [4, 0, -1], [2, 2, 32]):
        want_shape = [4, 4, 8] if shape == [4, 0, -1] else shape
        got = vm.invoke("main", xv, np.array(shape, "int32")).numpy()
        np.testing.assert_allclose(got, np.exp(xv.reshape(want_shape)), rtol=1e-6)
    with pytest.raises(ExecutionError, match=r"dyn\.reshape.*\(4, 4, 8\).*\(3, 3, 3\)"):
        vm.invoke("main", xv, np.array([3, 3, 3], "int32"))
