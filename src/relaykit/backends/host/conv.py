"""Native convolution kernels of the host: depthwise convolution and GEMM epilogues.

Two C kernels (``backend/native/conv.c``, through :mod:`relaykit.backends.host.native`):

- ``rk_dw_conv2d_f32``: depthwise convolution (NCHW, any stride, dilation, padding and
  channel multiplier) of a block of channels, with its epilogue (per-channel bias,
  residual, clamp) applied to each output row while it is in the L1 cache. NumPy's
  tap-by-tap passes ran MobileNetV2's 17 depthwise layers at ~3 GMAC/s.
- ``rk_epilogue_f32``: ``y = clamp(src + bias + residual, lo, hi)`` on a block of a
  matrix product's output, bias per row (a convolution's channels) or per column (a
  dense layer's features): one pass instead of NumPy's bias_add, add and clip passes,
  run on each GEMM block right after it is computed.

Both take their operands as a small array of addresses and one of sizes, made once when
the step is bound, so a call costs one ctypes call. Their float32 results agree with the
NumPy kernels to rounding (the order of the additions differs).

:class:`Epilogue` describes what a fused step applies after its producer
(see :mod:`relaykit.execution.fusion`).
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from relaykit.backends.host import native as host_native
from relaykit.backends.host.native import address, f32_contiguous
from relaykit.errors import ExecutionError
from relaykit.runtime.threads import get_policy

try:  # a core dependency (the thread policy sets BLAS threads with it)
    from threadpoolctl import threadpool_info as _threadpool_info
except ImportError:  # pragma: no cover - only when installed without its dependencies
    _threadpool_info = None

__all__ = ["Epilogue", "Take", "kernels", "depthwise", "epilogue_block", "winograd"]

Run = Callable[[], Any]
_P = ctypes.c_void_p


class Take(Protocol):
    """Scratch memory of a step (``Scratch.take``)."""

    def __call__(self, shape: Sequence[int], dtype: Any) -> np.ndarray: ...


@dataclass(frozen=True)
class Epilogue:
    """``y = clamp(producer + bias + residual, lo, hi)``, elementwise, in that order.

    ``y`` is the array the fused step writes (the last fused operator's output; it may be
    the producer's own output); ``bias`` is 1-D, along the channel axis of a convolution's
    output or the last axis of a dense layer's; ``residual`` has ``y``'s size;
    ``lo``/``hi`` are ``-inf``/``inf`` when there is no clamp."""

    y: np.ndarray
    bias: np.ndarray | None = None
    residual: np.ndarray | None = None
    lo: float = float("-inf")
    hi: float = float("inf")

    def matrix(
        self, shape: tuple[int, int], bias_per_row: bool, offset: int = 0
    ) -> MatrixEpilogue | None:
        """The epilogue of a 2-D product of ``shape`` whose elements are ``y``'s (and
        ``residual``'s) from flat element ``offset`` on, bias per row (a convolution's
        channels) or per column (a dense layer's features); ``None`` when the arrays do not
        allow it."""
        y = _matrix(self.y, offset, shape)
        res = None if self.residual is None else _matrix(self.residual, offset, shape)
        if y is None or (self.residual is not None and res is None):
            return None
        bias = self.bias
        if bias is not None and (
            bias.dtype != np.float32
            or not bias.flags.c_contiguous
            or bias.size != shape[0 if bias_per_row else 1]
        ):
            return None
        return MatrixEpilogue(y, res, bias, bias_per_row, self.lo, self.hi)


@dataclass(frozen=True)
class MatrixEpilogue:
    """An :class:`Epilogue` on a 2-D product: ``y = clamp(product + bias + res)``."""

    y: np.ndarray
    res: np.ndarray | None
    bias: np.ndarray | None
    bias_per_row: bool
    lo: float
    hi: float

    def block(self, src: np.ndarray, rows: tuple[int, int], cols: tuple[int, int]) -> Run:
        """The epilogue on a block of the product ``src`` (``y``'s shape)."""
        run = epilogue_block(src, self.y, self, rows, cols)
        if run is None:
            raise ExecutionError("the GEMM epilogue needs float32 matrices with unit column stride")
        return run


def _matrix(a: np.ndarray, offset: int, shape: tuple[int, int]) -> np.ndarray | None:
    if not a.flags.c_contiguous or a.size < offset + shape[0] * shape[1]:
        return None
    return a.reshape(-1)[offset : offset + shape[0] * shape[1]].reshape(shape)


_lock = threading.Lock()
_SIGNATURES: dict[str, host_native.Signature] = {
    "rk_dw_conv2d_f32": (None, [_P, _P, _P]),
    "rk_epilogue_f32": (None, [_P, _P, _P]),
    "rk_dw_conv2d_run": (None, [_P, _P, _P, ctypes.c_int64]),
    "rk_gemm_run": (None, [_P, _P, _P, ctypes.c_int64]),
    "rk_im2col_f32": (None, [_P, _P]),
    "rk_dw_scratch_floats": (ctypes.c_int64, [_P]),
    "rk_pool_park": (None, []),
    "rk_wino_run": (None, [_P, _P, _P, ctypes.c_int64]),
}


def _hook_park(lib: Any) -> None:
    # the Python host workers park the native pool's spinning threads
    get_policy().add_park_hook(lib.rk_pool_park)


def kernels() -> Any:
    """The native library with the convolution kernels' signatures set, or ``None``."""
    return host_native.typed(_SIGNATURES, _hook_park)


def _call(fn: Any, addrs: Sequence[int], sizes: Sequence[int], lo: float, hi: float) -> Run:
    """``fn`` bound to its operand arrays (kept alive by the closure)."""
    p = np.array(addrs, np.uintp)
    s = np.array(sizes, np.int64)
    f = np.array([lo, hi], np.float32)
    call = functools.partial(fn, _P(p.ctypes.data), _P(s.ctypes.data), _P(f.ctypes.data))
    return functools.partial(_keep, call, (p, s, f))


def depthwise(
    x: np.ndarray,
    w: np.ndarray,
    o: np.ndarray,
    pads: tuple[int, int, int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    take: Take,
    epilogue: Epilogue | None = None,
    blocks: int = 1,
    threads: Callable[[], int] | None = None,
) -> Run | None:
    """The native depthwise convolution of ``x`` (NCHW) by ``w`` (``[C*m, 1, KH, KW]``)
    into ``o``: one call whose ``blocks`` channel ranges per image the calling thread and
    ``threads()`` - 1 pool threads take in turn; ``None`` when the library is unavailable
    or the operands are not C-contiguous float32. ``epilogue`` (bias per channel,
    residual, clamp; its ``y`` must be ``o``) is applied in the same pass."""
    lib = kernels()
    epi = epilogue or Epilogue(o)
    bias = epi.bias
    res = epi.residual
    if lib is None or not f32_contiguous(x, w, o, bias, res) or epi.y is not o:
        return None
    if res is not None and (res.size != o.size or np.may_share_memory(res, o)):
        return None  # the rows are written before the residual is read
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    oh, ow = o.shape[2], o.shape[3]
    (sh, sw), (dh, dw) = strides, dilation
    geometry = [oc // c, h, wd, oh, ow, kh, kw, sh, sw, dh, dw, pads[0], pads[1]]
    shape = np.array([0, 0, *geometry], np.int64)
    floats = int(lib.rk_dw_scratch_floats(_P(shape.ctypes.data)))
    bounds = sorted({c * i // blocks for i in range(blocks + 1)})
    scratch = take((len(bounds) - 1, floats), np.float32)
    addrs = [address(x), address(w), address(bias), address(res), address(o), address(scratch)]
    sizes = [n, len(bounds) - 1, *geometry, floats, *bounds, c * h * wd, oc * oh * ow]
    return _threaded(lib.rk_dw_conv2d_run, addrs, sizes, epi.lo, epi.hi, threads,
                     (x, w, o, bias, res, scratch))  # fmt: skip


def im2col(
    x: np.ndarray,
    cols: np.ndarray,
    kernel: tuple[int, int],
    pads: tuple[int, int, int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    out_hw: tuple[int, int],
    take: Take,
) -> Run | None:
    """The native im2col of the NCHW ``x`` into ``cols`` (``[N, C*KH*KW, OH*OW]``,
    C-contiguous), or ``None`` when the library is unavailable or the arrays do not fit."""
    lib = kernels()
    if lib is None or not f32_contiguous(x, cols):
        return None
    n, c, h, wd = x.shape
    geometry = [c, h, wd, *out_hw, *kernel, *strides, *dilation, pads[0], pads[1]]
    shape = np.array([0, 0, 1, *geometry[1:]], np.int64)
    floats = int(lib.rk_dw_scratch_floats(_P(shape.ctypes.data)))
    scratch = take((floats,), np.float32)
    runs: list[Run] = []
    for i in range(n):
        p = np.array([address(x[i]), address(cols[i]), address(scratch)], np.uintp)
        s = np.array(geometry, np.int64)
        call = functools.partial(lib.rk_im2col_f32, _P(p.ctypes.data), _P(s.ctypes.data))
        runs.append(functools.partial(_keep, call, (p, s, x, cols, scratch)))
    return runs[0] if n == 1 else functools.partial(_run_all, runs)


def winograd(
    x: np.ndarray,
    ut: np.ndarray,
    o: np.ndarray,
    pads: tuple[int, int],
    take: Take,
    epilogue: Epilogue | None = None,
    threads: Callable[[], int] | None = None,
) -> Run | None:
    """The native Winograd F(2x2, 3x3) convolution (stride 1, no dilation) of ``x``
    (NCHW) into ``o`` (``[N, K, OH, OW]``) by the transformed weight ``ut`` (``[16, K,
    C]``, :func:`relaykit.backends.host.winograd_math.transformed_weight_kc`), top and left
    padding ``pads`` (the bottom and right ones follow from ``o``'s size): one call
    running the input transform, the 16 products (NumPy's ``cblas_sgemm``) and the
    output transform with ``epilogue`` (bias per channel, residual, clamp; it writes
    ``epilogue.y``) on the native pool. ``None`` when the library or ``cblas_sgemm`` is
    unavailable or the operands are not C-contiguous float32."""
    lib = kernels()
    sgemm = blas_sgemm() if lib is not None else None
    epi = epilogue or Epilogue(o)
    y, bias, res = epi.y, epi.bias, epi.residual
    if lib is None or sgemm is None or not f32_contiguous(x, ut, o, y, bias, res):
        return None
    if y.size != o.size or (res is not None and res.size != o.size):
        return None
    if bias is not None and bias.size != o.shape[1]:
        return None
    if res is not None and np.may_share_memory(res, y) and res.ctypes.data != y.ctypes.data:
        return None  # a residual overlapping y other than element by element
    n, c, h, wd = x.shape
    k, oh, ow = o.shape[1], o.shape[2], o.shape[3]
    tiles = n * ((oh + 1) // 2) * ((ow + 1) // 2)
    v = take((16, c, tiles), np.float32)
    m = take((16, k, tiles), np.float32)
    in_blocks = max(1, min(n * c, 4 * _WINO_BLOCKS_PER_THREAD))
    out_blocks = max(1, min(n * k, 4 * _WINO_BLOCKS_PER_THREAD))
    addrs = [sgemm[0], *map(address, (x, ut, bias, res, y, v, m))]
    sizes = [sgemm[1], n, c, h, wd, k, oh, ow, pads[0], pads[1], in_blocks, 1, out_blocks]
    return _threaded(lib.rk_wino_run, addrs, sizes, epi.lo, epi.hi, threads,
                     (x, ut, o, y, bias, res, v, m))  # fmt: skip


#: Blocks of a Winograd transform per thread (of up to 4 threads): a late thread leaves
#: little undone.
_WINO_BLOCKS_PER_THREAD = 4


def _run_all(runs: list[Run]) -> None:
    for run in runs:
        run()


def _keep(run: Run, _arrays: tuple[Any, ...]) -> None:
    """Call ``run`` (``_arrays``: the operands, kept alive while the step exists)."""
    run()


def epilogue_block(
    src: np.ndarray,
    y: np.ndarray,
    epi: Epilogue | MatrixEpilogue,
    rows: tuple[int, int],
    cols: tuple[int, int],
    bias_per_row: bool | None = None,
    res: np.ndarray | None = None,
) -> Run | None:
    """``y[r, k] = clamp(src[r, k] + bias + res[r, k])`` on rows ``rows`` and columns
    ``cols`` of the 2-D ``src``, ``y`` and ``res`` (unit column stride), bias
    ``epi.bias`` indexed by row or by column (``bias_per_row``, ``res``: those of a
    :class:`MatrixEpilogue` when not given); ``None`` when the library is unavailable or
    the operands do not fit the kernel."""
    lib = kernels()
    bias = epi.bias
    if isinstance(epi, MatrixEpilogue):
        res = epi.res if res is None else res
        bias_per_row = epi.bias_per_row if bias_per_row is None else bias_per_row
    arrays = [src, y] + ([res] if res is not None else [])
    if lib is None or not all(_matrix_ok(a) for a in arrays):
        return None
    if bias is not None and (bias.dtype != np.float32 or not bias.flags.c_contiguous):
        return None
    brow, bcol = (bias, None) if bias_per_row else (None, bias)
    ld = [a.strides[0] // 4 for a in (src, y)] + [res.strides[0] // 4 if res is not None else 0]
    addrs = [address(src), address(y), address(brow), address(bcol), address(res)]
    run = _call(lib.rk_epilogue_f32, addrs, [*rows, *cols, *ld], epi.lo, epi.hi)
    return functools.partial(_keep, run, (src, y, bias, res))


def _matrix_ok(a: np.ndarray) -> bool:
    return a.ndim == 2 and a.dtype == np.float32 and a.strides[1] == 4 and a.strides[0] % 4 == 0


def _blas_operand(a: np.ndarray) -> tuple[int, int] | None:
    """(transposed, leading dimension) of a 2-D float32 BLAS operand, or ``None``."""
    if a.ndim != 2 or a.dtype != np.float32:
        return None
    r, c = a.strides
    if c == 4 and r % 4 == 0 and r // 4 >= max(1, a.shape[1]):
        return 0, r // 4
    if r == 4 and c % 4 == 0 and c // 4 >= max(1, a.shape[0]):
        return 1, c // 4
    return None


_sgemm: list[tuple[int, int] | None] = []


def blas_sgemm() -> tuple[int, int] | None:
    """The address of ``cblas_sgemm`` in the BLAS NumPy loaded and whether it takes 64-bit
    integers, or ``None`` when it cannot be found (GEMMs then go through ``np.matmul``)."""
    with _lock:
        if not _sgemm:
            _sgemm.append(_find_sgemm())
        return _sgemm[0]


def _find_sgemm() -> tuple[int, int] | None:
    if _threadpool_info is None:  # pragma: no cover - a core dependency
        return None
    libs = [i["filepath"] for i in _threadpool_info() if i.get("internal_api") == "openblas"]
    libs.sort(key=lambda path: "numpy" not in path)  # NumPy's own first
    for path in libs:
        try:
            dll = ctypes.CDLL(path)
        except OSError:
            continue
        for name in ("scipy_cblas_sgemm64_", "cblas_sgemm64_", "scipy_cblas_sgemm", "cblas_sgemm"):
            fn = getattr(dll, name, None)
            if fn is not None:
                addr = ctypes.cast(fn, ctypes.c_void_p).value
                if addr:
                    return int(addr), int(name.endswith("64_"))
    return None


def gemm(
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    cuts: Sequence[tuple[int, int]],
    by_rows: bool,
    epilogue: MatrixEpilogue | None = None,
    threads: Callable[[], int] | None = None,
) -> Run | None:
    """``out = a @ b`` (2-D float32) in blocks ``cuts`` of rows or columns, each followed
    by ``epilogue`` on it, all in one native call whose blocks the calling thread and
    ``threads()`` - 1 pool threads take in turn; ``None`` when the library or NumPy's
    ``cblas_sgemm`` is unavailable or an operand does not fit BLAS."""
    lib = kernels()
    sgemm = blas_sgemm() if lib is not None else None
    oa, ob = _blas_operand(a), _blas_operand(b)
    if lib is None or sgemm is None or oa is None or ob is None or not _matrix_ok(out):
        return None
    res = None if epilogue is None else epilogue.res
    y = None if epilogue is None else epilogue.y
    if (y is not None and not _matrix_ok(y)) or (res is not None and not _matrix_ok(res)):
        return None
    bias = None if epilogue is None else epilogue.bias
    brow, bcol = (bias, None) if epilogue is not None and epilogue.bias_per_row else (None, bias)
    m, k = a.shape
    n = b.shape[1]
    addrs = [sgemm[0], *map(address, (a, b, out, brow, bcol, res, y))]
    ldr = 0 if res is None else res.strides[0] // 4
    ldy = 0 if y is None else y.strides[0] // 4
    bounds = [cuts[0][0]] + [hi for _, hi in cuts]
    sizes = [sgemm[1], oa[0], ob[0], m, n, k, oa[1], ob[1], out.strides[0] // 4, ldr, ldy,
             int(by_rows), len(cuts), *bounds]  # fmt: skip
    lo, hi = (epilogue.lo, epilogue.hi) if epilogue is not None else (float("-inf"), float("inf"))
    return _threaded(lib.rk_gemm_run, addrs, sizes, lo, hi, threads,
                     (a, b, out, bias, res, y))  # fmt: skip


def _threaded(
    fn: Any,
    addrs: Sequence[int],
    sizes: Sequence[int],
    lo: float,
    hi: float,
    threads: Callable[[], int] | None,
    keep: tuple[Any, ...],
) -> Run:
    p = np.array(addrs, np.uintp)
    s = np.array(sizes, np.int64)
    f = np.array([lo, hi], np.float32)
    call = functools.partial(fn, _P(p.ctypes.data), _P(s.ctypes.data), _P(f.ctypes.data))
    return functools.partial(_threaded_call, call, threads or _one, (p, s, f, *keep))


def _one() -> int:
    return 1


def _threaded_call(call: Any, threads: Callable[[], int], _arrays: tuple[Any, ...]) -> None:
    """``call(threads())`` (``_arrays``: the operands, kept alive while the step exists)."""
    call(threads())
