"""matmul_run (the host GEMMs of nn.dense, nn.conv2d and nn.batch_matmul) on the native
path (NumPy's cblas_sgemm per block on the native pool) and on the NumPy path, against
float64 products: whole and split products, transposed operands, batches, 1-3 threads."""

import contextlib

import numpy as np
import pytest

from relaykit.backends.host import conv as host_conv
from relaykit.backends.host import native as host_native
from relaykit.backends.host.kernels import matmul_run
from relaykit.runtime.threads import get_policy

RNG = np.random.default_rng(9)


@pytest.fixture(params=["native", "numpy"])
def path(request):
    if request.param == "native" and host_conv.kernels() is None:
        pytest.skip("no C compiler: the native kernels are unavailable")
    with contextlib.nullcontext() if request.param == "native" else host_native.disabled():
        yield request.param


@pytest.fixture(params=[1, 3])
def threads(request, monkeypatch):
    policy = get_policy()
    monkeypatch.setattr(policy, "host_threads", lambda: request.param)
    return request.param


@pytest.mark.parametrize(
    "m, k, n, ta, tb",
    [
        (3, 5, 4, False, False),  # whole
        (128, 128, 128, False, True),  # dense: x @ w.T, two column blocks
        (96, 16, 3000, False, False),  # 1x1 convolution: column blocks
        (600, 64, 49, False, False),  # 1x1 convolution on 7x7: row blocks
        (300, 200, 40, True, False),  # transposed left side, row blocks
        (1, 1280, 1000, False, True),  # a vector times a matrix
    ],
)
def test_matmul_run_matches_float64(path, threads, m, k, n, ta, tb):
    a = RNG.standard_normal((k, m) if ta else (m, k)).astype("float32")
    b = RNG.standard_normal((n, k) if tb else (k, n)).astype("float32")
    a, b = (a.T if ta else a), (b.T if tb else b)
    out = np.full((m, n), np.nan, "float32")
    run = matmul_run(a, b, out)
    run()
    run()
    np.testing.assert_allclose(out, a.astype("f8") @ b.astype("f8"), rtol=1e-5, atol=1e-4)


def test_batched_matmul_run_matches_float64(path, threads):
    a = RNG.standard_normal((8, 64, 32)).astype("float32")
    b = RNG.standard_normal((8, 32, 64)).astype("float32")
    out = np.empty((8, 64, 64), "float32")
    matmul_run(a, b, out)()
    np.testing.assert_allclose(out, a.astype("f8") @ b, rtol=1e-5, atol=1e-4)


def test_split_products_give_the_same_bits_on_any_thread_count(path):
    """Blocks depend on the shapes only."""
    a = RNG.standard_normal((200, 300)).astype("float32")
    b = RNG.standard_normal((300, 500)).astype("float32")
    outs = []
    policy = get_policy()
    for t in (1, 2, 3):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(policy, "host_threads", lambda t=t: t)
            out = np.empty((200, 500), "float32")
            matmul_run(a, b, out)()
            outs.append(out)
    assert all(np.array_equal(outs[0], o) for o in outs[1:])
