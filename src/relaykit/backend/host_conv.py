"""Native convolution kernels of the host: depthwise convolution and GEMM epilogues.

Two C kernels (``backend/native/conv.c``, through :mod:`relaykit.backend.host_native`):

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
(see :mod:`relaykit.backend.host_fusion`).
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from relaykit.backend import host_native

__all__ = ["Epilogue", "Take", "kernels", "depthwise", "epilogue_block"]

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

    def blocks(
        self, src: np.ndarray, shape: tuple[int, int], bias_per_row: bool, offset: int = 0
    ) -> Callable[[tuple[int, int], tuple[int, int]], Run] | None:
        """A maker of the epilogue's runs on blocks of the 2-D product ``src`` (of
        ``shape``; ``y`` and ``residual`` are read as the same 2-D matrix starting at flat
        element ``offset``), or ``None`` when the native kernel cannot take them."""
        y = _matrix(self.y, offset, shape)
        res = None if self.residual is None else _matrix(self.residual, offset, shape)
        if y is None or (self.residual is not None and res is None):
            return None
        if epilogue_block(src, y, self, (0, 0), (0, 0), bias_per_row, res) is None:
            return None

        def make(r: tuple[int, int], c: tuple[int, int]) -> Run:
            run = epilogue_block(src, y, self, r, c, bias_per_row, res)
            assert run is not None
            return run

        return make


def _matrix(a: np.ndarray, offset: int, shape: tuple[int, int]) -> np.ndarray | None:
    if not a.flags.c_contiguous or a.size < offset + shape[0] * shape[1]:
        return None
    return a.reshape(-1)[offset : offset + shape[0] * shape[1]].reshape(shape)


_lock = threading.Lock()
_typed: dict[int, Any] = {}


def kernels() -> Any:
    """The native library with the convolution kernels' signatures set, or ``None``."""
    lib = host_native.library()
    if lib is None:
        return None
    key = id(lib)
    with _lock:
        if key not in _typed:
            for name in ("rk_dw_conv2d_f32", "rk_epilogue_f32"):
                fn = getattr(lib, name)
                fn.argtypes = [_P, _P, _P]
                fn.restype = None
            lib.rk_dw_scratch_floats.argtypes = [_P]
            lib.rk_dw_scratch_floats.restype = ctypes.c_int64
            _typed[key] = lib
        return _typed[key]


def _addr(a: np.ndarray | None) -> int:
    return 0 if a is None else int(a.ctypes.data)


def _call(fn: Any, addrs: Sequence[int], sizes: Sequence[int], lo: float, hi: float) -> Run:
    """``fn`` bound to its operand arrays (kept alive by the closure)."""
    p = np.array(addrs, np.uintp)
    s = np.array(sizes, np.int64)
    f = np.array([lo, hi], np.float32)
    call = functools.partial(fn, _P(p.ctypes.data), _P(s.ctypes.data), _P(f.ctypes.data))
    return functools.partial(_keep, call, (p, s, f))


def _f32c(*arrays: np.ndarray | None) -> bool:
    return all(a is None or (a.dtype == np.float32 and a.flags.c_contiguous) for a in arrays)


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
) -> list[Run] | None:
    """The native depthwise convolution of ``x`` (NCHW) by ``w`` (``[C*m, 1, KH, KW]``)
    into ``o``, as independent tasks (``blocks`` channel ranges per image), or ``None``
    when the library is unavailable or the operands are not C-contiguous float32.
    ``epilogue`` (bias per channel, residual, clamp; its ``y`` must be ``o``) is applied
    in the same pass."""
    lib = kernels()
    epi = epilogue or Epilogue(o)
    bias = epi.bias
    res = epi.residual
    if lib is None or not _f32c(x, w, o, bias, res) or epi.y is not o:
        return None
    if res is not None and (res.size != o.size or np.may_share_memory(res, o)):
        return None  # the rows are written before the residual is read
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    oh, ow = o.shape[2], o.shape[3]
    (sh, sw), (dh, dw) = strides, dilation
    geometry = [oc // c, h, wd, oh, ow, kh, kw, sh, sw, dh, dw, pads[0], pads[1]]
    floats = int(lib.rk_dw_scratch_floats(_P(np.array([0, 0, *geometry], np.int64).ctypes.data)))
    bounds = [c * i // blocks for i in range(blocks + 1)]
    cuts = [(lo, hi) for lo, hi in itertools.pairwise(bounds) if hi > lo]
    planes = take((len(cuts), floats), np.float32)
    tasks: list[Run] = []
    per_in, per_out = c * h * wd, oc * oh * ow
    for i in range(n):
        xi, oi = _addr(x) + 4 * i * per_in, _addr(o) + 4 * i * per_out
        ri = 0 if res is None else _addr(res) + 4 * i * per_out
        for b, (lo, hi) in enumerate(cuts):
            addrs = [xi, _addr(w), _addr(bias), ri, oi, _addr(planes[b])]
            run = _call(lib.rk_dw_conv2d_f32, addrs, [lo, hi, *geometry], epi.lo, epi.hi)
            tasks.append(functools.partial(_keep, run, (x, w, o, bias, res, planes)))
    return tasks


def _keep(run: Run, _arrays: tuple[Any, ...]) -> None:
    """Call ``run`` (``_arrays``: the operands, kept alive while the step exists)."""
    run()


def epilogue_block(
    src: np.ndarray,
    y: np.ndarray,
    epi: Epilogue,
    rows: tuple[int, int],
    cols: tuple[int, int],
    bias_per_row: bool,
    res: np.ndarray | None = None,
) -> Run | None:
    """``y[r, k] = clamp(src[r, k] + bias + res[r, k])`` on rows ``rows`` and columns
    ``cols`` of the 2-D ``src``, ``y`` and ``res`` (unit column stride), bias
    ``epi.bias`` indexed by row or by column; ``None`` when the library is unavailable
    or the operands do not fit the kernel."""
    lib = kernels()
    bias = epi.bias
    arrays = [src, y] + ([res] if res is not None else [])
    if lib is None or any(
        a.ndim != 2 or a.dtype != np.float32 or a.strides[1] != 4 or a.strides[0] % 4
        for a in arrays
    ):
        return None
    if bias is not None and (bias.dtype != np.float32 or not bias.flags.c_contiguous):
        return None
    brow, bcol = (bias, None) if bias_per_row else (None, bias)
    ld = [a.strides[0] // 4 for a in (src, y)] + [res.strides[0] // 4 if res is not None else 0]
    addrs = [_addr(src), _addr(y), _addr(brow), _addr(bcol), _addr(res)]
    run = _call(lib.rk_epilogue_f32, addrs, [*rows, *cols, *ld], epi.lo, epi.hi)
    return functools.partial(_keep, run, (src, y, bias, res))
