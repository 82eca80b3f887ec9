"""The host's softmax, layer norm and GELU kernels (native C and NumPy) against float64
NumPy / scipy computations, including the blocks the host threads split them into."""

import contextlib

import numpy as np
import pytest
import scipy.special

from relaykit.backends.host import native as host_native
from relaykit.backends.host import nn as host_nn
from relaykit.backends.host.kernels import Scratch, bind_kernel
from relaykit.ir.op import get_op
from relaykit.op.define import make_attrs
from relaykit.runtime.threads import get_policy

RNG = np.random.default_rng(5)


def _native_available() -> bool:
    return host_native.library() is not None


@pytest.fixture(params=["native", "numpy"])
def path(request):
    if request.param == "native":
        if not _native_available():
            pytest.skip("no C compiler: the native host kernels are unavailable")
        yield request.param
    else:
        with host_native.disabled():
            yield request.param


@pytest.fixture(params=[1, 2])
def threads(request, monkeypatch):
    """The host kernels split their work over this many threads."""
    policy = get_policy()
    state = policy.snapshot()
    policy.set_num_threads(request.param)
    monkeypatch.setattr(policy, "host_threads", lambda: request.param)
    yield request.param
    policy.restore(state)


def run_host(op_name, inputs, out=None, **attrs):
    """Bind as the graph executor does (measure, then a garbage arena), run twice."""
    a = make_attrs(get_op(op_name), attrs)
    out = np.full(inputs[0].shape, np.nan, inputs[0].dtype) if out is None else out
    measure = Scratch(None)
    bind_kernel(op_name, a, list(inputs), [out], measure)
    arena = np.full(measure.peak + 64, 0xAB, np.uint8)
    run = bind_kernel(op_name, a, list(inputs), [out], Scratch(arena))
    run()
    run()
    return out


def softmax64(x, axis=-1):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm64(x, gamma, beta, eps, scale=True, center=True):
    x = x.astype(np.float64)
    mean = x.mean(-1, keepdims=True)
    out = (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    return out * (gamma if scale else 1) + (beta if center else 0)


@pytest.mark.parametrize("shape", [(3, 7), (2, 6, 128, 128), (5, 1000), (1, 1), (9, 17)])
def test_softmax_last_axis(path, threads, shape):
    x = (RNG.standard_normal(shape) * 8).astype(np.float32)
    x.reshape(-1)[::13] = -1e30  # masked-out scores
    got = run_host("nn.softmax", [x], axis=-1)
    np.testing.assert_allclose(got, softmax64(x), rtol=1e-5, atol=1e-9)
    assert np.allclose(got.sum(-1), 1.0, atol=1e-5)


def test_softmax_special_rows(path):
    x = RNG.standard_normal((5, 40)).astype(np.float32)
    x[0, 3] = np.nan
    x[1, :] = -np.inf
    x[2, 5] = -np.inf
    x[3, :] = 1e38  # all equal and huge: uniform
    x[4, :20] = -200.0  # exp underflows to 0
    got = run_host("nn.softmax", [x], axis=-1)
    assert np.isnan(got[0]).all() and np.isnan(got[1]).all()
    assert got[2, 5] == 0.0
    np.testing.assert_allclose(got[2], softmax64(np.where(np.isinf(x[2]), -1e30, x[2])), rtol=1e-5)
    np.testing.assert_allclose(got[3], 1 / 40, rtol=1e-6)
    assert (got[4, :20] == 0).all()
    np.testing.assert_allclose(got[4], softmax64(x[4]), rtol=1e-5, atol=1e-30)


def test_softmax_in_place(path):
    x = RNG.standard_normal((8, 300)).astype(np.float32)
    want = softmax64(x)
    run_host("nn.softmax", [x], out=x, axis=-1)  # twice in place: softmax of softmax
    np.testing.assert_allclose(x, softmax64(want), rtol=1e-5)


@pytest.mark.parametrize(
    "scale, center", [(True, True), (True, False), (False, True), (False, False)]
)
@pytest.mark.parametrize("shape", [(2, 64, 256), (3, 5), (200, 1024), (4, 1)])
def test_layer_norm(path, threads, shape, scale, center):
    c = shape[-1]
    x = (RNG.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    g, b = RNG.standard_normal(c).astype(np.float32), RNG.standard_normal(c).astype(np.float32)
    got = run_host("nn.layer_norm", [x, g, b], axis=-1, epsilon=1e-5, scale=scale, center=center)
    want = layer_norm64(x, g, b, 1e-5, scale, center)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6 * np.abs(want).max())


@pytest.mark.parametrize(
    "offset, spread", [(1e4, 1e-2), (-2.5e5, 0.5), (7.0, 1e-6), (3.0, 0.0), (1e-20, 1e-22)]
)
def test_layer_norm_large_mean_tiny_variance(path, offset, spread):
    x = (offset + spread * RNG.standard_normal((6, 768))).astype(np.float32)
    g, b = RNG.standard_normal(768).astype(np.float32), RNG.standard_normal(768).astype(np.float32)
    got = run_host("nn.layer_norm", [x, g, b], axis=-1, epsilon=1e-12)
    want = layer_norm64(x, g, b, 1e-12)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * np.abs(want).max())


def test_layer_norm_other_axis_and_float64_use_numpy():
    x = RNG.standard_normal((2, 6, 5)).astype(np.float32)
    g, b = RNG.standard_normal(6).astype(np.float32), RNG.standard_normal(6).astype(np.float32)
    got = run_host("nn.layer_norm", [x, g, b], axis=1, epsilon=1e-5)
    want = layer_norm64(np.moveaxis(x, 1, -1), g, b, 1e-5)
    np.testing.assert_allclose(got, np.moveaxis(want, -1, 1), rtol=1e-5, atol=1e-5)
    x64 = x.astype(np.float64)
    got64 = run_host("nn.layer_norm", [x64, g.astype("f8"), b.astype("f8")], axis=1, epsilon=1e-5)
    np.testing.assert_allclose(got64, np.moveaxis(want, -1, 1), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 100, 65_536 * 3 + 5])
def test_gelu_erf_native(threads, n):
    if not _native_available():
        pytest.skip("no C compiler")
    x = np.concatenate([
        np.linspace(-12, 12, n, dtype=np.float32), np.float32([np.inf, -np.inf, np.nan, -0.0])
    ])  # fmt: skip
    out = np.empty_like(x)
    run = host_nn.gelu_erf_run(x, out)
    assert run is not None
    run()
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = 0.5 * x64 * (1 + scipy.special.erf(x64 / np.sqrt(2)))
    fin = np.isfinite(want)
    # 1 + erf(x / sqrt 2) cancels for negative x (as in every float32 GELU): an error of
    # a rounding of erf's, times x / 2
    err = np.abs(out[fin] - want[fin])
    bound = 1e-6 * np.abs(want[fin]) + 3e-8 * np.abs(x64[fin])
    assert (err <= bound).all(), float((err / bound).max())
    assert out[-4] == np.inf and np.isnan(out[-2]) and out[-1] == 0.0


def test_native_runs_refuse_what_they_do_not_cover():
    if not _native_available():
        pytest.skip("no C compiler")
    x = np.ones((4, 6), np.float32)
    assert host_nn.softmax_run(x, np.empty_like(x), 0) is None  # not the last axis
    assert host_nn.softmax_run(x.T, np.empty((6, 4), np.float32), -1) is None  # strided
    assert host_nn.erf_run(x.astype(np.float64), np.empty((4, 6))) is None
    g = np.ones(5, np.float32)
    assert host_nn.layer_norm_run(x, g, None, np.empty_like(x), -1, 1e-5) is None
    with host_native.disabled():
        assert host_nn.erf_run(x, np.empty_like(x)) is None


def test_results_do_not_depend_on_the_thread_count(monkeypatch):
    if not _native_available():
        pytest.skip("no C compiler")
    x = RNG.standard_normal((400, 512)).astype(np.float32)  # split in blocks
    g, b = RNG.standard_normal(512).astype(np.float32), RNG.standard_normal(512).astype(np.float32)
    results = []
    for n in (1, 2, 3):
        with contextlib.ExitStack() as stack:
            policy = get_policy()
            state = policy.snapshot()
            stack.callback(policy.restore, state)
            policy.set_num_threads(n)
            monkeypatch.setattr(policy, "host_threads", lambda n=n: n)
            results.append((
                run_host("nn.softmax", [x], axis=-1),
                run_host("nn.layer_norm", [x, g, b], axis=-1, epsilon=1e-5),
                run_host("erf", [x]),
            ))  # fmt: skip
    for other in results[1:]:
        for a, b_ in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b_)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_in_place_and_apart(path, threads, dtype):
    x = (RNG.standard_normal((300, 700)) * 3).astype(dtype)  # split in blocks at 2 threads
    x64 = x.astype(np.float64)
    want = 0.5 * x64 * (1 + scipy.special.erf(x64 / np.sqrt(2)))
    got = run_host("nn.gelu", [x])
    inplace = x.copy()
    a = make_attrs(get_op("nn.gelu"), {})
    measure = Scratch(None)
    bind_kernel("nn.gelu", a, [inplace], [inplace], measure)
    bind_kernel(
        "nn.gelu", a, [inplace], [inplace], Scratch(np.empty(measure.peak + 64, np.uint8))
    )()
    bound = 1e-6 * np.abs(want) + 3e-8 * np.abs(x64)
    assert (np.abs(got - want) <= bound).all()
    assert (np.abs(inplace - want) <= bound).all()
