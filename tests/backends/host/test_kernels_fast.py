"""The fast host kernels (issue 13): special functions, GEMMs without copies, depthwise
convolution, softmax, layer norm and reductions agree with independent computations."""

import math

import numpy as np
import pytest

from relaykit.backends.host.kernels import Scratch, bind_kernel
from relaykit.ir.op import get_op
from relaykit.op.define import make_attrs
from relaykit.runtime.threads import get_policy

RNG = np.random.default_rng(7)


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def run_host(op_name, inputs, out_shape, out_dtype="float32", **attrs):
    """Bind ``op_name`` as the graph executor does (measure, then a garbage arena) and run it
    twice; the output."""
    a = make_attrs(get_op(op_name), attrs)
    out = np.full(out_shape, np.nan, out_dtype)
    measure = Scratch(None)
    bind_kernel(op_name, a, list(inputs), [out], measure)
    arena = np.full(measure.peak + 64, 0xAB, np.uint8)
    run = bind_kernel(op_name, a, list(inputs), [out], Scratch(arena))
    run()
    run()
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erf_matches_math_erf(dtype):
    x = np.concatenate([np.linspace(-6, 6, 2001), [0.0, -0.0, 1e-30, 30.0, -30.0]]).astype(dtype)
    got = run_host("erf", [x], x.shape, dtype)
    want = np.array([math.erf(float(v)) for v in x])
    tol = 1e-15 if dtype == "float64" else 2e-7
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)


def test_erf_reference_kernel_matches_math_erf():
    x = np.linspace(-5, 5, 1001)
    got = get_op("erf").get_attr("FCompute")([x], make_attrs(get_op("erf"), {}))
    np.testing.assert_allclose(got, [math.erf(v) for v in x], rtol=0, atol=2e-15)


def test_sigmoid_matches_closed_form():
    x = np.linspace(-40, 40, 801).astype("float32")
    got = run_host("sigmoid", [x], x.shape)
    want = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-30)


def test_dense_on_3d_input_is_one_gemm_with_the_right_result():
    x, w = rand(2, 5, 8), rand(6, 8)
    got = run_host("nn.dense", [x, w], (2, 5, 6))
    want = np.einsum("bik,jk->bij", x.astype("f8"), w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "ashape, bshape, ta, tb",
    [
        ((3, 4, 5), (3, 5, 6), False, False),
        ((3, 4, 5), (1, 5, 6), False, False),  # shared right side: one GEMM
        ((1, 4, 5), (3, 5, 6), False, False),
        ((3, 5, 4), (1, 6, 5), True, True),
        ((2, 4, 5), (2, 6, 5), False, True),
    ],
)
def test_batch_matmul_shapes(ashape, bshape, ta, tb):
    a, b = rand(*ashape), rand(*bshape)
    a_ = np.swapaxes(a, 1, 2) if ta else a
    b_ = np.swapaxes(b, 1, 2) if tb else b
    want = np.matmul(a_.astype("f8"), b_.astype("f8"))
    got = run_host("nn.batch_matmul", [a, b], want.shape, transpose_a=ta, transpose_b=tb)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _depthwise_loops(x, w, stride, pad, mult):
    """Depthwise convolution by explicit loops over channels and taps (float64)."""
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    xp = np.pad(x.astype("f8"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, c * mult, oh, ow))
    for oc in range(c * mult):
        ic = oc // mult
        for i in range(kh):
            for j in range(kw):
                tap = xp[
                    :,
                    ic,
                    i : i + (oh - 1) * stride + 1 : stride,
                    j : j + (ow - 1) * stride + 1 : stride,
                ]
                out[:, oc] += w[oc, 0, i, j] * tap
    return out


@pytest.mark.parametrize(
    "n, c, hw, k, stride, pad, mult",
    [(1, 16, 9, 3, 1, 1, 1), (2, 8, 10, 3, 2, 1, 1), (1, 6, 7, 5, 1, 2, 2), (1, 40, 5, 3, 2, 0, 1)],
)
def test_depthwise_conv2d(n, c, hw, k, stride, pad, mult):
    x, w = rand(n, c, hw, hw), rand(c * mult, 1, k, k)
    want = _depthwise_loops(x, w, stride, pad, mult)
    got = run_host(
        "nn.conv2d", [x, w], want.shape, groups=c, strides=(stride, stride),
        padding=(pad, pad), kernel_size=(k, k), channels=c * mult,
    )  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax(axis):
    x = rand(2, 5, 7) * 10
    x[0, 0, 0] = -1e30  # a masked-out score
    e = np.exp(x.astype("f8") - x.max(axis=axis, keepdims=True))
    want = e / e.sum(axis=axis, keepdims=True)
    got = run_host("nn.softmax", [x], x.shape, axis=axis)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("scale, center", [(True, True), (False, True), (True, False)])
def test_layer_norm(scale, center):
    x, g, b = rand(3, 4, 16) * 3 + 1, rand(16), rand(16)
    x64 = x.astype("f8")
    mean = x64.mean(-1, keepdims=True)
    want = (x64 - mean) / np.sqrt(((x64 - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    want = want * (g if scale else 1) + (b if center else 0)
    got = run_host(
        "nn.layer_norm", [x, g, b], x.shape, axis=-1, epsilon=1e-5, scale=scale, center=center
    )
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "name, fn", [("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min)]
)
@pytest.mark.parametrize(
    "axis, keepdims, exclude",
    [((1,), True, False), ((0, 2), False, False), ((1,), False, True), (None, False, False)],
)
def test_reductions(name, fn, axis, keepdims, exclude):
    x = rand(3, 4, 5)
    axes = tuple(range(3)) if axis is None else axis
    if exclude:
        axes = tuple(a for a in range(3) if a not in axes)
    want = fn(x.astype("f8"), axis=axes, keepdims=keepdims)
    got = run_host(name, [x], np.shape(want), axis=axis, keepdims=keepdims, exclude=exclude)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_depthwise_conv2d_split_between_threads(monkeypatch):
    """Big enough to be split by channel over the host threads (with a budget of 3, parts
    of unequal size); the same numbers as the loops."""
    policy = get_policy()
    before = policy.budget().total
    state = policy.snapshot()
    policy.set_num_threads(3)
    monkeypatch.setattr(policy, "host_threads", lambda: 3)  # as with OPENBLAS_NUM_THREADS=1
    try:
        x, w = rand(2, 10, 40, 40), rand(10, 1, 3, 3)
        want = _depthwise_loops(x, w, 1, 1, 1)
        got = run_host(
            "nn.conv2d", [x, w], want.shape, groups=10, padding=(1, 1), kernel_size=(3, 3),
            channels=10,
        )  # fmt: skip
    finally:
        policy.restore(state)
    assert policy.budget().total == before
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, ref", [("erf", None), ("exp", np.exp), ("tanh", np.tanh)])
def test_costly_unary_split_between_threads(name, ref, monkeypatch):
    policy = get_policy()
    state = policy.snapshot()
    policy.set_num_threads(3)
    monkeypatch.setattr(policy, "host_threads", lambda: 3)  # as with OPENBLAS_NUM_THREADS=1
    try:
        x = np.linspace(-4, 4, 100_003).astype("float32").reshape(1, -1)
        got = run_host(name, [x], x.shape)
    finally:
        policy.restore(state)
    x64 = x.astype("f8")
    want = np.vectorize(math.erf)(x64) if ref is None else ref(x64)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7)
