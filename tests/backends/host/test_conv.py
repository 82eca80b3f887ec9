"""The native convolution kernels (backend/native/conv.c) with their fused epilogues,
against NumPy computations in float64."""

import os

import numpy as np
import pytest

from relaykit.backends.host import conv as host_conv
from relaykit.backends.host.conv import Epilogue
from relaykit.backends.host.kernels import Scratch

RNG = np.random.default_rng(5)

pytestmark = pytest.mark.skipif(
    host_conv.kernels() is None, reason="no C compiler: the native kernels are unavailable"
)


def _depthwise_ref(x, w, stride, pad):
    n, c, h, wd = x.shape
    oc, _, k, _ = w.shape
    m = oc // c
    xp = np.pad(x.astype("f8"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    out = np.zeros((n, oc, oh, ow))
    for i in range(k):
        for j in range(k):
            tap = xp[
                :, :, i : i + (oh - 1) * stride + 1 : stride, j : j + (ow - 1) * stride + 1 : stride
            ]
            out += np.repeat(tap, m, axis=1) * w[None, :, 0, i, j, None, None]
    return out


@pytest.mark.parametrize("blocks, threads", [(1, 1), (3, 2), (5, 3)])
@pytest.mark.parametrize("stride, mult", [(1, 1), (2, 1), (1, 2)])
def test_depthwise_with_bias_residual_and_clamp(blocks, threads, stride, mult):
    x = RNG.standard_normal((2, 5, 11, 9)).astype("float32")
    w = RNG.standard_normal((5 * mult, 1, 3, 3)).astype("float32")
    conv = _depthwise_ref(x, w, stride, 1)
    bias = RNG.standard_normal(5 * mult).astype("float32")
    res = RNG.standard_normal(conv.shape).astype("float32")
    o = np.full(conv.shape, np.nan, "float32")
    epi = Epilogue(o, bias, res, -0.5, 1.5)
    run = host_conv.depthwise(
        x, w, o, (1, 1, 1, 1), (stride, stride), (1, 1), Scratch(None).take, epi, blocks,
        lambda: threads,
    )  # fmt: skip
    assert run is not None
    run()
    run()
    want = np.clip(conv + bias[None, :, None, None] + res, -0.5, 1.5)
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-5)


def test_depthwise_refuses_a_residual_in_its_output():
    x = RNG.standard_normal((1, 4, 6, 6)).astype("float32")
    w = RNG.standard_normal((4, 1, 3, 3)).astype("float32")
    o = np.empty((1, 4, 6, 6), "float32")
    epi = Epilogue(o, None, o, 0.0, 6.0)
    assert host_conv.depthwise(x, w, o, (1,) * 4, (1, 1), (1, 1), Scratch(None).take, epi) is None


@pytest.mark.parametrize("per_row", [True, False])
def test_epilogue_block_on_part_of_a_matrix(per_row):
    src = RNG.standard_normal((6, 40)).astype("float32")
    res = RNG.standard_normal((6, 40)).astype("float32")
    bias = RNG.standard_normal(6 if per_row else 40).astype("float32")
    y = np.zeros((6, 40), "float32")
    epi = Epilogue(y, bias, None, float("-inf"), 0.75)
    run = host_conv.epilogue_block(src, y, epi, (1, 5), (8, 33), per_row, res)
    assert run is not None
    run()
    b = bias[:, None] if per_row else bias[None, :]
    want = np.zeros((6, 40))
    want[1:5, 8:33] = np.minimum(src + b + res, 0.75)[1:5, 8:33]
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


def test_epilogue_in_place_over_the_residual_keeps_nan():
    src = RNG.standard_normal((3, 17)).astype("float32")
    src[1, 3] = np.nan
    res = RNG.standard_normal((3, 17)).astype("float32")
    want = np.clip(src.astype("f8") + res, 0.0, 6.0)
    epi = Epilogue(res, None, None, 0.0, 6.0)
    run = host_conv.epilogue_block(src, res, epi, (0, 3), (0, 17), True, res)
    assert run is not None
    run()  # y is the residual itself: each element is read before it is written
    np.testing.assert_allclose(res, want, rtol=1e-6, atol=1e-6)
    assert np.isnan(res[1, 3])


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize(
    "ta, tb, by_rows, cuts",
    [
        (False, False, False, [(0, 48), (48, 96), (96, 130)]),
        (False, True, True, [(0, 16), (16, 40)]),
        (True, False, True, [(0, 40)]),
        (True, True, False, [(0, 64), (64, 130)]),
    ],
)
def test_native_gemm_blocks_with_epilogue(threads, ta, tb, by_rows, cuts):
    if host_conv.blas_sgemm() is None:
        pytest.skip("NumPy's BLAS has no cblas_sgemm the kernels can call")
    m, k, n = 40, 33, 130
    a = rand_t((m, k), ta)
    b = rand_t((k, n), tb)
    bias = RNG.standard_normal(m if by_rows else n).astype("float32")
    res = RNG.standard_normal((m, n)).astype("float32")
    out = np.full((m, n), np.nan, "float32")
    y = np.full((m, n), np.nan, "float32")
    epi = Epilogue(y, bias, res, -1.0, 2.0).matrix((m, n), by_rows)
    run = host_conv.gemm(a, b, out, cuts, by_rows, epi, lambda: threads)
    assert run is not None
    run()
    b2 = bias[:, None] if by_rows else bias[None, :]
    prod = a.astype("f8") @ b.astype("f8")
    np.testing.assert_allclose(out, prod, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(y, np.clip(prod + b2 + res, -1, 2), rtol=1e-5, atol=1e-4)


def rand_t(shape, transposed):
    """A float32 matrix of ``shape``, stored transposed (a Fortran-order view) or not."""
    if transposed:
        return RNG.standard_normal(shape[::-1]).astype("float32").T
    return RNG.standard_normal(shape).astype("float32")


def test_native_gemm_refuses_operands_blas_cannot_take():
    a = RNG.standard_normal((8, 12)).astype("float32")[:, ::2]  # no unit stride
    b = RNG.standard_normal((6, 5)).astype("float32")
    assert host_conv.gemm(a, b, np.empty((8, 5), "float32"), [(0, 5)], False) is None


def test_pool_runs_many_steps_back_to_back_with_the_same_results():
    """Steps follow each other faster than idle pool threads fall asleep: no block is
    lost, run twice or run with another step's operands."""
    if host_conv.blas_sgemm() is None:
        pytest.skip("NumPy's BLAS has no cblas_sgemm the kernels can call")
    a = RNG.standard_normal((64, 32)).astype("float32")
    bs = [RNG.standard_normal((32, 96)).astype("float32") for _ in range(3)]
    outs = [np.empty((64, 96), "float32") for _ in bs]
    cuts = [(lo, lo + 16) for lo in range(0, 96, 16)]
    runs = [
        host_conv.gemm(a, b, o, cuts, False, None, lambda: 3) for b, o in zip(bs, outs, strict=True)
    ]
    wants = [a.astype("f8") @ b for b in bs]
    x = RNG.standard_normal((2, 6, 9, 9)).astype("float32")
    w = RNG.standard_normal((6, 1, 3, 3)).astype("float32")
    dw_out = np.empty((2, 6, 9, 9), "float32")
    dw = host_conv.depthwise(x, w, dw_out, (1,) * 4, (1, 1), (1, 1), Scratch(None).take,
                             None, 3, lambda: 2)  # fmt: skip
    dw_want = _depthwise_ref(x, w, 1, 1)
    for _ in range(300):
        for o in outs:
            o.fill(np.nan)
        dw_out.fill(np.nan)
        for run in [*runs, dw]:
            run()
        for o, want in zip(outs, wants, strict=True):
            np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(dw_out, dw_want, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_pool_works_in_a_forked_child():
    """A child made by fork() after the pool started has no pool threads: it starts its
    own (and never waits for the parent's)."""
    if host_conv.blas_sgemm() is None:
        pytest.skip("NumPy's BLAS has no cblas_sgemm the kernels can call")
    a = RNG.standard_normal((64, 32)).astype("float32")
    b = RNG.standard_normal((32, 128)).astype("float32")
    out = np.empty((64, 128), "float32")
    run = host_conv.gemm(a, b, out, [(0, 64), (64, 128)], False, None, lambda: 2)
    run()  # the pool has started in this process
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run the same step, report the error
        try:
            out.fill(np.nan)
            run()
            err = float(np.abs(out - a.astype("f8") @ b).max())
            os.write(write, repr(err).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        reported = f.read()
    os.waitpid(pid, 0)
    assert reported and float(reported) < 1e-3
