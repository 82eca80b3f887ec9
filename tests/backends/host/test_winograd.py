"""Winograd F(2x2, 3x3) convolutions on the host (backend/native/winograd.c through
host_conv.winograd and convolution.conv2d_run): against float64 convolutions written
out here (NumPy, and SciPy's correlate2d in the graph-executor test), with odd sizes,
asymmetric pads, batch 2, every epilogue, native kernels on and off, 1 and 2 threads."""

import contextlib

import numpy as np
import pytest
from scipy.signal import correlate2d

import relaykit as tvm
from relaykit import relay
from relaykit.backends.host import conv as host_conv
from relaykit.backends.host import convolution, winograd_math
from relaykit.backends.host import native as host_native
from relaykit.backends.host.conv import Epilogue
from relaykit.backends.host.kernels import Scratch, conv2d_run
from relaykit.execution.graph_executor import GraphExecutor
from relaykit.ir.attrs import Attrs
from relaykit.runtime.threads import get_policy

RNG = np.random.default_rng(11)
native = pytest.mark.skipif(
    host_conv.kernels() is None or host_conv.blas_sgemm() is None,
    reason="no C compiler or no cblas_sgemm: the native Winograd kernel is unavailable",
)

#: Lavin & Gray's input and output transforms for F(2x2, 3x3), written out here.
BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.float64)
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.float64)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def constant(*shape):
    """A weight as the executor hands it to binders: read-only."""
    w = rand(*shape)
    w.flags.writeable = False
    return w


def conv_ref(x, w, pads):
    """3x3 stride-1 NCHW/OIHW convolution in float64, pads (top, left, bottom, right)."""
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype("f8"), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh, ow = xp.shape[2] - 2, xp.shape[3] - 2
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,kc->nkhw", xp[:, :, i : i + oh, j : j + ow], w[:, :, i, j])
    return out


def close(got, want):
    """Within 1e-5 of the reference, relative to its largest magnitude."""
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def attrs(pads):
    return Attrs({"strides": (1, 1), "padding": pads, "dilation": (1, 1), "groups": 1,
                  "data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": ""})  # fmt: skip


def test_host_weight_layout_is_the_transposed_dnnl_layout():
    w = rand(6, 5, 3, 3)
    kc, ck = winograd_math.transformed_weight_kc(w), winograd_math.transformed_weight(w)
    assert kc.shape == (16, 6, 5) and ck.shape == (16, 5, 6)
    np.testing.assert_array_equal(kc, ck.transpose(0, 2, 1))
    want = winograd_math.G @ w[4, 3].astype("f8") @ winograd_math.G.T
    np.testing.assert_allclose(kc[:, 4, 3].reshape(4, 4), want, rtol=1e-6)
    d = RNG.standard_normal((4, 4))
    y = AT @ (want * (BT @ d @ BT.T)) @ AT.T
    np.testing.assert_allclose(y, correlate2d(d, w[4, 3].astype("f8"), mode="valid"), rtol=1e-6)


CASES = [  # n, c, k, h, w, pads
    (1, 3, 5, 7, 9, (1, 1, 1, 1)),
    (2, 17, 19, 11, 6, (0, 2, 1, 0)),
    (2, 8, 4, 5, 13, (2, 0, 0, 1)),
    (1, 16, 33, 2, 3, (1, 1, 1, 1)),
    (1, 4, 4, 9, 9, (0, 0, 0, 0)),
]


@native
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", CASES)
def test_native_kernel_without_epilogue(case, threads):
    n, c, k, h, wd, pads = case
    x, w = rand(n, c, h, wd), rand(k, c, 3, 3)
    want = conv_ref(x, w, pads)
    o = np.full(want.shape, np.nan, "float32")
    ut = winograd_math.transformed_weight_kc(w)
    run = host_conv.winograd(x, ut, o, pads[:2], Scratch(None).take, None, lambda: threads)
    assert run is not None
    run()
    close(o, want)


@native
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "bias, residual, bounds",
    [
        (True, False, (float("-inf"), float("inf"))),
        (True, False, (0.0, float("inf"))),  # relu
        (False, True, (float("-inf"), float("inf"))),
        (True, True, (0.0, 6.0)),  # relu6
        (True, True, (-0.5, 0.75)),  # clip
    ],
)
def test_native_kernel_with_epilogue(bias, residual, bounds, threads):
    x, w = rand(2, 7, 9, 11), rand(6, 7, 3, 3)
    pads = (1, 0, 2, 1)
    conv = conv_ref(x, w, pads)
    b = rand(6) if bias else None
    res = rand(*conv.shape) if residual else None
    o = np.empty(conv.shape, "float32")
    y = np.full(conv.shape, np.nan, "float32")
    run = host_conv.winograd(
        x, winograd_math.transformed_weight_kc(w), o, pads[:2], Scratch(None).take,
        Epilogue(y, b, res, *bounds), lambda: threads,
    )  # fmt: skip
    assert run is not None
    run()
    run()
    want = conv + (b[:, None, None] if bias else 0) + (res if residual else 0)
    close(y, np.clip(want, *bounds))


@native
def test_residual_that_is_the_output():
    """y = relu(conv + y): the residual read and the result written in the same buffer."""
    x, w = rand(1, 5, 8, 7), rand(4, 5, 3, 3)
    pads = (1, 1, 1, 1)
    y = rand(1, 4, 8, 7)
    want = np.maximum(conv_ref(x, w, pads) + y, 0)
    o = np.empty_like(y)
    run = host_conv.winograd(
        x, winograd_math.transformed_weight_kc(w), o, pads[:2], Scratch(None).take,
        Epilogue(y, None, y, 0.0),
    )  # fmt: skip
    assert run is not None
    run()
    close(y, want)


def _spy(monkeypatch):
    calls = []
    real = host_conv.winograd

    def spy(*args, **kwargs):
        run = real(*args, **kwargs)
        calls.append(run is not None)
        return run

    monkeypatch.setattr(host_conv, "winograd", spy)
    return calls


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("case", CASES[:3])
def test_conv2d_run_native_on_and_off(case, enabled, monkeypatch):
    """Native on: the Winograd kernel runs (forced for these small shapes); off: the
    NumPy path, same results."""
    if enabled and (host_conv.kernels() is None or host_conv.blas_sgemm() is None):
        pytest.skip("the native Winograd kernel is unavailable")
    calls = _spy(monkeypatch)
    monkeypatch.setattr(convolution, "winograd_pays", lambda *a: True)
    n, c, k, h, wd, pads = case
    x, w = rand(n, c, h, wd), constant(k, c, 3, 3)
    want = conv_ref(x, w, pads)
    o = np.full(want.shape, np.nan, "float32")
    with host_native.chosen(enabled):
        run = conv2d_run(attrs(pads), x, w, o, Scratch(None))
    assert run is not None
    run()
    close(o, want)
    assert calls == ([True] if enabled else [False])


def test_writable_weight_keeps_the_direct_path(monkeypatch):
    """A weight that may change between runs (not a constant) is not transformed once."""
    calls = _spy(monkeypatch)
    monkeypatch.setattr(convolution, "winograd_pays", lambda *a: True)
    x, w = rand(1, 4, 6, 6), rand(4, 4, 3, 3)
    o = np.empty((1, 4, 6, 6), "float32")
    run = conv2d_run(attrs((1, 1, 1, 1)), x, w, o, Scratch(None))
    assert run is not None
    w[...] = rand(4, 4, 3, 3)
    run()
    close(o, conv_ref(x, w, (1, 1, 1, 1)))
    assert calls == []


def test_rule():
    pays = convolution.winograd_pays
    one = ((1, 1), (1, 1))
    assert pays((1, 64, 56, 56), (64, 64, 3, 3), (1, 64, 56, 56), *one)
    assert pays((1, 512, 7, 7), (512, 512, 3, 3), (1, 512, 7, 7), *one)
    assert not pays((1, 3, 224, 224), (64, 3, 3, 3), (1, 64, 224, 224), *one)  # RGB input
    assert not pays((1, 512, 4, 4), (512, 512, 3, 3), (1, 512, 4, 4), *one)  # 4 tiles
    assert not pays((1, 64, 56, 56), (64, 64, 3, 3), (1, 64, 28, 28), (2, 2), (1, 1))
    assert not pays((1, 64, 56, 56), (64, 64, 3, 3), (1, 64, 52, 52), (1, 1), (2, 2))
    assert not pays((1, 64, 56, 56), (64, 64, 5, 5), (1, 64, 56, 56), *one)
    # 64 MiB cap on each intermediate: 16 * tiles * channels * 4 bytes
    assert not pays((1, 256, 224, 224), (256, 256, 3, 3), (1, 256, 224, 224), *one)
    assert not pays((1, 16, 2, 8192), (16, 16, 3, 3), (1, 16, 2, 8192), *one)  # too wide


@pytest.fixture(params=[("native", 1), ("native", 2), ("numpy", 2)])
def setting(request):
    how, threads = request.param
    if how == "native" and (host_conv.kernels() is None or host_conv.blas_sgemm() is None):
        pytest.skip("the native Winograd kernel is unavailable")
    policy = get_policy()
    state = policy.snapshot()
    policy.set_num_threads(threads)
    ctx = contextlib.nullcontext() if how == "native" else host_native.disabled()
    try:
        with ctx:
            yield how
    finally:
        policy.restore(state)


def test_residual_block_in_the_graph_executor(setting, monkeypatch):
    """conv + bias + relu, conv + bias + residual + relu (a ResNet basic block), batch 2,
    odd size: both convolutions pass the measured rule and run by Winograd, fused."""
    calls = _spy(monkeypatch)
    c, hw = 32, (17, 15)
    p = {"w1": rand(c, c, 3, 3) * 0.1, "b1": rand(c), "w2": rand(c, c, 3, 3) * 0.1, "b2": rand(c)}
    x = relay.var("x", shape=(2, c, *hw))
    w1, b1, w2, b2 = (relay.var(k, shape=v.shape, dtype="float32") for k, v in p.items())
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w1, padding=(1, 1)), b1))
    h = relay.nn.bias_add(relay.nn.conv2d(h, w2, padding=(1, 1)), b2)
    out = relay.nn.relu(relay.add(h, x))
    func = relay.Function(relay.analysis.free_vars(out), out)
    lib = relay.build(tvm.IRModule.from_expr(func), target="llvm", params=p)
    ex = lib["default"](tvm.cpu())
    assert isinstance(ex, GraphExecutor)
    xv = rand(2, c, *hw)
    ex.set_input("x", xv)
    ex.run()

    def conv(a, w):
        a, w = a.astype("f8"), w.astype("f8")
        a = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
        return np.array([[sum(correlate2d(a[i, j], w[o, j], mode="valid") for j in range(c))
                          for o in range(c)] for i in range(2)])  # fmt: skip

    h = np.maximum(conv(xv, p["w1"]) + p["b1"][:, None, None], 0)
    want = np.maximum(conv(h, p["w2"]) + p["b2"][:, None, None] + xv, 0)
    close(ex.get_output(0).numpy(), want)
    if setting == "native":
        assert calls and all(calls)
        assert ex.num_steps == 2


@native
def test_weight_changed_in_place_between_bindings(monkeypatch):
    """A parameter array the user changes and binds again is transformed again."""
    monkeypatch.setattr(convolution, "winograd_pays", lambda *a: True)
    x, base = rand(1, 4, 6, 6), rand(4, 4, 3, 3)
    for _ in range(2):
        w = base.view()
        w.flags.writeable = False
        o = np.empty((1, 4, 6, 6), "float32")
        conv2d_run(attrs((1, 1, 1, 1)), x, w, o, Scratch(None))()
        close(o, conv_ref(x, base, (1, 1, 1, 1)))
        base[...] = rand(4, 4, 3, 3)
