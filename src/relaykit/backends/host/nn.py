"""Native float32 kernels of the transformer operators: erf, GELU, softmax, layer norm.

``backend/native/nn.c`` computes each of these in one pass over the data
(one call per block of elements or rows), where NumPy needs five to twelve
whole-array passes: erf (MLAS' two polynomials, 2.4 ulp), the exact GELU
``0.5 x (1 + erf(x / sqrt 2))``, softmax over the last axis (max-subtracted)
and layer normalisation over the last axis (statistics of ``x - x[0]``, the
variance of the centred row in a second pass over it, so a large mean with a
tiny variance loses nothing).

Each ``*_run`` function returns the bound kernel (a no-argument callable
writing into ``out``), or ``None`` when the native library is unavailable
(see :mod:`relaykit.backends.host.native`) or the arrays are not C-contiguous
float32 — the caller then binds its NumPy kernel. Work above ~80 us (196,608
elements) is cut into blocks that the calling thread and the host workers
take in turn (:meth:`relaykit.runtime.threads.ThreadPolicy.run_parallel`);
each element (erf, GELU) or row (softmax, layer norm) is computed the same way
in any block, so results do not depend on the thread count.

>>> import numpy as np
>>> x = np.array([0.0, 0.5, -2.0], np.float32)
>>> o = np.empty_like(x)
>>> run = erf_run(x, o)
>>> run is None or (run(), bool(np.allclose(o, [0.0, 0.5205, -0.9953], atol=1e-4)))[1]
True
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.backends.host import native as host_native
from relaykit.backends.host.native import address, f32_contiguous
from relaykit.runtime.threads import get_policy

__all__ = ["erf_run", "gelu_erf_run", "softmax_run", "layer_norm_run", "native_nn"]

Run = Callable[[], Any]

_P, _N = ctypes.c_void_p, ctypes.c_ssize_t
_SIGNATURES: dict[str, host_native.Signature] = {
    "rk_erf_f32": (None, [_P, _P, _N]),
    "rk_gelu_erf_f32": (None, [_P, _P, _N]),
    "rk_softmax_f32": (None, [_P, _P, _N, _N]),
    "rk_layer_norm_f32": (None, [_P, _P, _P, _P, _N, _N, ctypes.c_float]),
}

#: Elements below which a kernel runs as one call: ~80 us of erf or softmax, ~50 us of
#: layer norm. Waking a sleeping host worker costs 10-50 us (more on a busy machine), so
#: a split pays only above that (measured: erf on 131,072 elements took 52 us on one
#: thread, 64 us split over two on a loaded 2-core machine).
_PARALLEL_MIN_ELEMENTS = 196_608
#: Elements per block of a split kernel (a few blocks per thread, so a late worker
#: leaves little for the others).
_ELEMENT_BLOCK = 32_768
#: Most blocks of a split kernel.
_MAX_BLOCKS = 8


def native_nn() -> ctypes.CDLL | None:
    """The native library with these kernels' signatures set, or ``None`` (disabled,
    or no compiler)."""
    return host_native.typed(_SIGNATURES)


def _cuts(size: int, parts: int, align: int) -> list[tuple[int, int]]:
    """``[0, size)`` in ``parts`` ranges of about equal size, cut at multiples of ``align``."""
    step = -(-size // parts)
    step = -(-step // align) * align
    return [(lo, min(size, lo + step)) for lo in range(0, size, step)]


def _parallel(tasks: list[Run], *keep: np.ndarray | None) -> Run:
    """One call of the tasks (in parallel when more than one); the kernels get addresses,
    so the run holds on to the arrays ``keep``."""
    inner = tasks[0] if len(tasks) == 1 else functools.partial(get_policy().run_parallel, tasks)

    def run(_keep: tuple[np.ndarray | None, ...] = keep) -> None:
        inner()

    return run


def _split_count(work: int, minimum: int) -> int:
    """Blocks for ``work`` elements: 1 when small or single-threaded, else a few per thread."""
    threads = get_policy().host_threads()
    if threads < 2 or work < minimum:
        return 1
    return max(2, min(_MAX_BLOCKS, work // _ELEMENT_BLOCK, 4 * threads))


def _elementwise(name: str, x: np.ndarray, out: np.ndarray) -> Run | None:
    lib = native_nn()
    if lib is None or not f32_contiguous(x, out) or x.shape != out.shape or x.size == 0:
        return None
    fn = getattr(lib, name)
    parts = _split_count(x.size, _PARALLEL_MIN_ELEMENTS)
    tasks: list[Run] = [
        functools.partial(fn, address(x, lo), address(out, lo), hi - lo)
        for lo, hi in _cuts(x.size, parts, 64)
    ]
    return _parallel(tasks, x, out)


def erf_run(x: np.ndarray, out: np.ndarray) -> Run | None:
    """``out = erf(x)`` (float32, within 2.4 ulp; NaN, +-inf and -0.0 as the exact erf)."""
    return _elementwise("rk_erf_f32", x, out)


def gelu_erf_run(x: np.ndarray, out: np.ndarray) -> Run | None:
    """``out = 0.5 x (1 + erf(x / sqrt 2))`` (float32)."""
    return _elementwise("rk_gelu_erf_f32", x, out)


def _row_blocks(rows: int, n: int) -> list[tuple[int, int]]:
    parts = _split_count(rows * n, _PARALLEL_MIN_ELEMENTS)
    return _cuts(rows, min(parts, rows), 1)


def _row_kernel_lib(x: np.ndarray, out: np.ndarray, axis: int) -> Any:
    """The library, when a row kernel over the last axis can run ``x`` -> ``out``."""
    lib = native_nn()
    if lib is None or not f32_contiguous(x, out) or x.shape != out.shape or x.size == 0:
        return None
    return lib if axis % x.ndim == x.ndim - 1 else None


def softmax_run(x: np.ndarray, out: np.ndarray, axis: int) -> Run | None:
    """``out = softmax(x, axis)`` for the last axis (float32, C-contiguous)."""
    lib = _row_kernel_lib(x, out, axis)
    if lib is None:
        return None
    n = x.shape[-1]
    rows = x.size // n
    fn = lib.rk_softmax_f32
    tasks: list[Run] = [
        functools.partial(fn, address(x, lo * n), address(out, lo * n), hi - lo, n)
        for lo, hi in _row_blocks(rows, n)
    ]
    return _parallel(tasks, x, out)


def layer_norm_run(
    x: np.ndarray,
    gamma: np.ndarray | None,
    beta: np.ndarray | None,
    out: np.ndarray,
    axis: int,
    epsilon: float,
) -> Run | None:
    """``out = (x - mean) / sqrt(var + epsilon) * gamma + beta`` over the last axis
    (``gamma``/``beta`` of that axis's length, or ``None`` to leave them out)."""
    lib = _row_kernel_lib(x, out, axis)
    if lib is None:
        return None
    n = x.shape[-1]
    params = [p for p in (gamma, beta) if p is not None]
    if not f32_contiguous(*params) or any(p.shape != (n,) for p in params):
        return None
    rows = x.size // n
    g = address(gamma) if gamma is not None else None
    b = address(beta) if beta is not None else None
    fn = lib.rk_layer_norm_f32
    eps = ctypes.c_float(epsilon)
    tasks: list[Run] = [
        functools.partial(fn, address(x, lo * n), g, b, address(out, lo * n), hi - lo, n, eps)
        for lo, hi in _row_blocks(rows, n)
    ]
    return _parallel(tasks, x, gamma, beta, out)
