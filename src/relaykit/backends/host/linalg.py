"""Matrix-product host kernels: ``nn.dense``, ``nn.batch_matmul`` and the blocked GEMM
they share, written straight into the planned buffer."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from relaykit.backends.host import conv as host_conv
from relaykit.backends.host.conv import Epilogue, MatrixEpilogue
from relaykit.backends.host.table import (
    Run,
    Scratch,
    float_same,
    register_host_kernel,
    sequence,
)
from relaykit.errors import ExecutionError
from relaykit.ir.attrs import Attrs
from relaykit.runtime.threads import get_policy

__all__ = ["MAX_BLOCKS", "blocks", "dense_run", "matmul_run"]

# -- linear algebra -----------------------------------------------------------------------------


#: A GEMM is cut into blocks of at least this many multiply-adds (~40 us on one thread).
#: Cutting is free on one thread (BERT-tiny's 128x128x128 product: 44 us whole or in two
#: column blocks) and the native pool hands a block over in ~0.1 us when its threads are
#: awake; but a two-block product waits for a pool thread that wakes (or is descheduled)
#: late. On a shared 2-core machine, BERT-tiny's host path took 2.15-2.74 ms (best of 20)
#: with blocks from 1M multiply-adds, 1.83-2.21 ms from 2M, 1.74-1.80 ms from 4M, where
#: MobileNetV2's 14x14 and 7x7 1x1 convolutions (4.8M) would no longer be split: 2M.
_SPLIT_MIN_MACS = 1 << 21
#: Most blocks of a split GEMM: a few per thread, so a late thread leaves little undone.
MAX_BLOCKS = 8
#: Fewest columns (or rows, or batch matrices) of a block.
_MIN_BLOCK = 64


def blocks(size: int, count: int, align: int = 16) -> list[tuple[int, int]]:
    """``size`` cut into ``count`` ranges of about equal size, cut at multiples of ``align``."""
    step = -(-size // count)
    step = -(-step // align) * align if step > align else step
    return [(lo, min(size, lo + step)) for lo in range(0, size, step)]


def matmul_run(
    a: np.ndarray, b: np.ndarray, out: np.ndarray, epilogue: MatrixEpilogue | None = None
) -> Run:
    """``out = a @ b`` (2-D, or 3-D with equal batch sizes) with BLAS on one thread; a big
    product is cut into blocks (of the batch, else of the columns of ``b`` or the rows of
    ``a``, whichever gives more) that the host threads take in turn (see
    :mod:`relaykit.runtime.threads`). The blocks depend on the shapes only, so the bits do
    not depend on the thread count.
    ``epilogue`` (2-D only) is applied to each block right after its product, while it is
    in the cache. 2-D float32 products run as one native call (NumPy's ``cblas_sgemm``
    per block, on the native pool; :func:`relaykit.backends.host.conv.gemm`) when the
    library is there.

    >>> a, b = np.ones((256, 128), np.float32), np.ones((128, 512), np.float32)
    >>> out = np.empty((256, 512), np.float32)
    >>> matmul_run(a, b, out)(); float(out.min()), float(out.max())
    (128.0, 128.0)
    """
    policy = get_policy()
    policy.ensure_applied()
    batch = a.shape[0] if a.ndim == 3 else 1
    m, k = a.shape[-2:]
    n = b.shape[-1]
    count = min(MAX_BLOCKS, batch * m * k * n // _SPLIT_MIN_MACS)
    two_d = a.ndim == b.ndim == out.ndim == 2
    if epilogue is not None and not two_d:
        raise ExecutionError("a GEMM epilogue needs 2-D operands")
    cut, by_rows = [(0, n)], False
    # columns, unless the rows give more (so more even) blocks
    cols, rows = min(count, n // _MIN_BLOCK), min(count, m // _MIN_BLOCK)
    if count >= 2 and cols >= 2 and cols >= rows:
        cut = blocks(n, cols)
    elif count >= 2 and rows >= 2:
        cut, by_rows = blocks(m, rows), True
    if two_d and min(m, n) > 1:  # (NumPy runs a vector product as GEMV)
        native = host_conv.gemm(a, b, out, cut, by_rows, epilogue, policy.host_threads)
        if native is not None:
            return native
    whole: Run = functools.partial(np.matmul, a, b, out=out)
    if epilogue is not None:
        whole = sequence([whole, epilogue.block(out, (0, m), (0, n))])
    if count < 2 or a.ndim != b.ndim or out.ndim != a.ndim or a.ndim not in (2, 3):
        return whole
    if batch >= 2 * min(count, 4) and epilogue is None:
        parts = [(a[lo:hi], b[lo:hi], out[lo:hi]) for lo, hi in blocks(batch, count, 1)]
        tasks: list[Run] = [functools.partial(np.matmul, x, y, out=o) for x, y, o in parts]
    elif len(cut) < 2:
        return whole
    elif by_rows:
        tasks = [
            _gemm_block(a[..., lo:hi, :], b, out[..., lo:hi, :], out, epilogue, (lo, hi), (0, n))
            for lo, hi in cut
        ]
    else:
        tasks = [
            _gemm_block(a, b[..., lo:hi], out[..., lo:hi], out, epilogue, (0, m), (lo, hi))
            for lo, hi in cut
        ]
    return functools.partial(policy.run_parallel, tasks)


def _gemm_block(
    a: np.ndarray,
    b: np.ndarray,
    part: np.ndarray,
    out: np.ndarray,
    epilogue: MatrixEpilogue | None,
    rows: tuple[int, int],
    cols: tuple[int, int],
) -> Run:
    gemm = functools.partial(np.matmul, a, b, out=part)
    return gemm if epilogue is None else sequence([gemm, epilogue.block(out, rows, cols)])


@register_host_kernel("nn.dense")
def _dense(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    return dense_run(args[0], args[1], outs[0])


def dense_run(
    x: np.ndarray, w: np.ndarray, o: np.ndarray, epilogue: Epilogue | None = None
) -> Run | None:
    """``o = x @ w.T`` (``nn.dense``), then ``epilogue`` (bias per output feature) on each
    block of ``o`` as it is computed; ``None`` when not handled here."""
    if not float_same(x, w, o):
        return None
    if x.ndim > 2 and x.flags.c_contiguous and o.flags.c_contiguous:
        # one GEMM over all leading axes, no copies
        x, o = x.reshape(-1, x.shape[-1]), o.reshape(-1, o.shape[-1])
    if epilogue is not None:
        matrix = epilogue.matrix(o.shape, False) if o.ndim == 2 else None
        if matrix is None:
            return None
        return matmul_run(x, w.T, o, matrix)
    if x.ndim != 2:
        get_policy().ensure_applied()
        return functools.partial(np.matmul, x, w.T, out=o)
    return matmul_run(x, w.T, o)


@register_host_kernel("nn.batch_matmul")
def _batch_matmul(
    attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run | None:
    a, b = args
    o = outs[0]
    if not float_same(a, b, o):
        return None
    a = a.transpose(0, 2, 1) if attrs.transpose_a else a
    b = b.transpose(0, 2, 1) if attrs.transpose_b else b
    if b.shape[0] == 1 and a.flags.c_contiguous:  # a shared right side: one (B*M, K) GEMM
        return matmul_run(a.reshape(-1, a.shape[-1]), b[0], o.reshape(-1, o.shape[-1]))
    if a.shape[0] != b.shape[0]:
        get_policy().ensure_applied()
        return functools.partial(np.matmul, a, b, out=o)
    return matmul_run(a, b, o)
