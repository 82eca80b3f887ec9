"""The float32 erf host kernel (two polynomials, as onnxruntime's MLAS computes it) against
scipy's float64 erf, on a dense grid of the whole float32 range and on special values; each
test runs on the native kernel (backend/native/nn.c) and on the NumPy one."""

import math

import numpy as np
import pytest
import scipy.special

from relaykit.backends.host import native as host_native
from relaykit.backends.host.kernels import Scratch, bind_kernel, erf_float32
from relaykit.ir.op import get_op
from relaykit.op.define import make_attrs
from relaykit.runtime.threads import get_policy


@pytest.fixture(autouse=True, params=["native", "numpy"])
def path(request):
    """Every test on both kernels (the native one only where a C compiler is)."""
    if request.param == "native":
        if host_native.library() is None:
            pytest.skip("no C compiler: the native host kernels are unavailable")
        yield request.param
    else:
        with host_native.disabled():
            yield request.param


def _run(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Bind ``erf`` as the graph executor does (measure, then a garbage arena) and run it
    (twice, unless in place)."""
    attrs = make_attrs(get_op("erf"), {})
    out = np.full(x.shape, np.nan, x.dtype) if out is None else out
    measure = Scratch(None)
    bind_kernel("erf", attrs, [x], [out], measure)
    arena = np.full(measure.peak + 64, 0xAB, np.uint8)
    run = bind_kernel("erf", attrs, [x], [out], Scratch(arena))
    run()
    if out is not x:
        run()
    return out


def _grid() -> np.ndarray:
    lin = np.linspace(-6, 6, 4_000_001, dtype=np.float32)
    tiny = np.float32(10.0) ** np.linspace(-38, 0.7, 200_001, dtype=np.float32)
    return np.concatenate([lin, tiny, -tiny, np.float32([1e30, -1e30, 3.4e38, 0.921875])])


def test_erf_float32_within_3_ulp_of_exact_everywhere():
    x = _grid()
    got = _run(x).astype(np.float64)
    want = scipy.special.erf(x.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    err = np.abs(got - want) / ulp
    assert err.max() <= 3.0, (float(err.max()), float(x[np.argmax(err)]))
    nz = want != 0
    rel = np.abs(got[nz] - want[nz]) / np.abs(want[nz])
    assert rel.max() < 2.5e-7


def test_erf_float32_special_values():
    x = np.zeros(4096, np.float32)
    x[:6] = [np.inf, -np.inf, np.nan, -0.0, 0.0, -np.nan]
    got = _run(x)
    assert got[0] == 1.0 and got[1] == -1.0
    assert np.isnan(got[2]) and np.isnan(got[5])
    assert got[3] == 0.0 and np.signbit(got[3])
    assert got[4] == 0.0 and not np.signbit(got[4])
    assert not np.signbit(got[6:]).any() and (got[6:] == 0).all()


def test_erf_float32_is_odd_and_monotonic():
    x = np.linspace(0, 5, 100_000, dtype=np.float32)
    pos, neg = _run(x), _run(-x)
    np.testing.assert_array_equal(neg, -pos)
    assert (np.diff(pos.astype(np.float64)) >= 0).all()


def test_erf_in_place_and_in_blocks_and_threads(monkeypatch):
    policy = get_policy()
    state = policy.snapshot()
    policy.set_num_threads(2)
    monkeypatch.setattr(policy, "host_threads", lambda: 2)
    try:
        x = np.linspace(-4, 4, 7 * 43_001, dtype=np.float32).reshape(7, -1)
        want = scipy.special.erf(x.astype(np.float64))
        got = _run(x.copy())
        inplace = x.copy()
        _run(inplace, out=inplace)
    finally:
        policy.restore(state)
    np.testing.assert_allclose(got, want, rtol=2.5e-7, atol=0)
    np.testing.assert_array_equal(inplace, got)


@pytest.mark.parametrize("n", [1, 7, 2047])
def test_small_erf_matches_math_erf(n):
    x = np.linspace(-3, 3, n, dtype=np.float32)
    got = _run(x)
    np.testing.assert_allclose(got, [math.erf(float(v)) for v in x], rtol=2.5e-7, atol=1e-38)


def test_erf_float32_function_directly():
    x = np.float32([-2.5, -1.0, -0.1, 0.0, 0.5, 0.921875, 0.93, 3.0, 4.0, 10.0])
    out = np.empty_like(x)
    with np.errstate(over="ignore"):
        erf_float32(x, out, np.empty((2, x.size), np.float32))
    np.testing.assert_allclose(out, scipy.special.erf(x.astype(np.float64)), rtol=2.5e-7, atol=0)
