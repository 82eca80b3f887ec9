"""Native integer kernels for the QNN operators on the host (``native/qnn.c``).

``qnn.conv2d`` (im2col, or the depthwise kernel), ``qnn.dense`` and ``qnn.batch_matmul``
multiply int8/uint8 operands into int32 sums (AVX512-VNNI ``vpdpbusd`` where the compiler
and the CPU have it: u8 x s8, an operand of the other signedness stored +-128 with its
zero point moved to match), then apply their epilogue while the block is in the cache: the
bias, ``qnn.requantize`` (TVM's Q31 fixed-point multiply, int64), the clips, the store as
int8 / uint8 (or int32 when there is no requantize). ``qnn.requantize``, ``qnn.quantize``,
``qnn.dequantize`` and ``qnn.add`` run as native elementwise passes. Results equal the
reference kernels of :mod:`relaykit.op.qnn` bit for bit.

Quantization parameters must be constants of the executor (read-only arrays) for these
kernels; anything else (a scale computed at run time, another layout) binds the
reference kernel instead (the binders return ``None``).

>>> from relaykit.backends.host.qnn import requant_params
>>> rq = requant_params(1, None, np.float32(0.5), np.int32(0), np.float32(1.0), np.int32(3),
...                     "UPWARD", "int8")
>>> rq is None or (int(rq.mult[0]), int(rq.rsh[0]))
(1073741824, 31)
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from relaykit.backends.host import conv as host_conv
from relaykit.backends.host import native as host_native
from relaykit.backends.host.native import address
from relaykit.backends.host.table import Scratch
from relaykit.errors import ExecutionError
from relaykit.op.qnn._common import fixed_point, qrange
from relaykit.runtime.threads import get_policy

__all__ = [
    "SERIAL_WORK",
    "Requant",
    "conv2d_run",
    "dense_run",
    "batch_matmul_run",
    "kernels",
    "requant_params",
    "threads_for",
    "vnni",
]

Run = Callable[[], Any]
_P = ctypes.c_void_p
_RUN = (None, [_P, _P, ctypes.c_int64])
_SIGNATURES: dict[str, host_native.Signature] = {
    "rk_q_vnni": (ctypes.c_int64, []),
    "rk_q_gemm_run": _RUN,
    "rk_q_im2col_run": _RUN,
    "rk_q_dw_run": _RUN,
    "rk_q_dw8_run": _RUN,
    "rk_q_dw8_ok": (ctypes.c_int64, []),
    "rk_q_requant_run": _RUN,
    "rk_q_quant_run": _RUN,
    "rk_q_dequant_run": _RUN,
    "rk_q_binary_run": _RUN,
    "rk_q_maxpool_run": _RUN,
    "rk_q_pack_rows": (None, [_P, _P]),
    "rk_q_pack_cols": (None, [_P, _P]),
}
_KIND = {"int8": 0, "uint8": 1, "int32": 2}
_BYTES = ("int8", "uint8")
_RB, _CB = 64, 128  # rows and columns of one task of a product
_SCALES = ("input_scale", "kernel_scale")


def kernels() -> Any:
    """The native library with these kernels' signatures set, or ``None``."""
    if host_conv.kernels() is None:  # registers the pool's park hook once
        return None
    return host_native.typed(_SIGNATURES)


def vnni() -> bool:
    """Whether the native integer products use AVX512-VNNI on this machine."""
    lib = kernels()
    return bool(lib is not None and lib.rk_q_vnni())


def _ptrs(*arrays: np.ndarray | None) -> np.ndarray:
    return np.array([address(a) for a in arrays], np.uintp)


#: Steps with less work than this (multiply-adds, or elements of an elementwise pass) run
#: on the calling thread alone: handing a few microseconds of work to the pool costs
#: about as much, and on a busy machine a helper thread that starts late stalls the step.
SERIAL_WORK = 1 << 18


def threads_for(policy: Any, work: int) -> int:
    """The threads a step of ``work`` multiply-adds (or elements) runs on."""
    return 1 if work < SERIAL_WORK else int(policy.host_threads())


def _call(
    fn: Any, p: np.ndarray, s: Sequence[int], keep: tuple[Any, ...], work: int = 1 << 62
) -> Run:
    """``fn(p, s, threads)`` per run; ``keep``: the operands, alive while the step is."""
    sa = np.array(list(s), np.int64)
    policy = get_policy()
    call = functools.partial(fn, _P(p.ctypes.data), _P(sa.ctypes.data))
    return functools.partial(_threaded, call, policy, work, (p, sa, *keep))


def _threaded(call: Any, policy: Any, work: int, _keep: tuple[Any, ...]) -> None:
    call(threads_for(policy, work))


def _const(*arrays: np.ndarray | None) -> bool:
    """Whether every array given is a constant of the executor (read-only)."""
    return all(a is None or not a.flags.writeable for a in arrays)


@dataclass
class Requant:
    """A requantize epilogue, per channel: ``add`` (bias - input zero point), the Q31
    multiplier ``mult`` with its shifts, then the output zero point and the clamp."""

    add: np.ndarray
    mult: np.ndarray
    lsh: np.ndarray
    rsh: np.ndarray
    ozp: int
    lo: int
    hi: int
    ident: bool
    #: how the product rounds: 0 halves up, 1 halves away from zero, 2 halves to even (Q31
    #: fixed point), 3 in float32 halves to even (``mult`` then holds the scale's bits)
    mode: int
    kind: int

    def tail(self) -> list[int]:
        return [self.ozp, self.lo, self.hi, int(self.ident), self.mode, self.kind]

    def ptrs(self) -> list[np.ndarray]:
        return [self.add, self.mult, self.lsh, self.rsh]


def _channels(v: Any, c: int) -> np.ndarray | None:
    flat = np.asarray(v).reshape(-1)
    if flat.size == 1:
        return np.broadcast_to(flat, (c,))
    return flat if flat.size == c else None


#: the epilogue's rounding codes (``Requant.mode``) of the fixed-point modes
_MODES = {"UPWARD": 0, "TONEAREST": 1, "TONEAREST_EVEN": 2}


def plain(c: int) -> Requant:
    """No requantize: the int32 sums plus ``add`` as they are."""
    z = np.zeros(c, np.int32)
    lo, hi = qrange("int32")
    return Requant(z, z, z, z, 0, lo, hi, True, 0, 2)


def requant_params(
    c: int,
    bias: np.ndarray | None,
    in_scale: Any,
    in_zp: Any,
    out_scale: Any,
    out_zp: Any,
    rounding: str,
    out_dtype: str,
    lo: float = -np.inf,
    hi: float = np.inf,
    compute_dtype: str = "int64",
) -> Requant | None:
    """The epilogue of ``qnn.requantize`` over ``c`` channels (parameters scalars or one
    per channel) after an int32 ``bias`` (or none), clamped to ``[lo, hi]`` (integral
    bounds) as well; ``None`` when the native epilogue cannot compute it exactly (in
    float32 it computes ``TONEAREST_EVEN`` only, TVM's modes add the zero point first)."""
    if out_dtype not in _KIND or rounding not in _MODES:
        return None
    if compute_dtype not in ("int64", "float32"):
        return None
    if compute_dtype == "float32" and rounding != "TONEAREST_EVEN":
        return None
    isc = np.asarray(in_scale, np.float32).reshape(-1)
    osc = np.asarray(out_scale, np.float32).reshape(-1)
    izp = _channels(np.asarray(in_zp, np.int64), c)
    ozp = np.asarray(out_zp).reshape(-1)
    if izp is None or ozp.size != 1 or isc.size not in (1, c) or osc.size not in (1, c):
        return None
    if not (np.all(np.isfinite(isc)) and np.all(isc > 0) and np.all(osc > 0)):
        return None
    dlo, dhi = qrange(out_dtype)
    if (lo != -np.inf and lo != int(lo)) or (hi != np.inf and hi != int(hi)):
        return None
    lo_i = dlo if lo == -np.inf else max(dlo, int(lo))
    hi_i = dhi if hi == np.inf else min(dhi, int(hi))
    if lo_i > hi_i:
        return None
    b = np.zeros(c, np.int64) if bias is None else bias.reshape(-1).astype(np.int64)
    add = ((b - izp) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    ident = isc.size == 1 and osc.size == 1 and isc[0] == osc[0]
    ratio = np.broadcast_to(isc.astype(np.float64) / osc.astype(np.float64), (c,))
    if compute_dtype == "float32":
        bits = np.ascontiguousarray(ratio.astype(np.float32)).view(np.int32)
        z = np.zeros(c, np.int32)
        return Requant(
            np.ascontiguousarray(add), bits, z, z, int(ozp[0]), lo_i, hi_i, bool(ident), 3,
            _KIND[out_dtype],
        )  # fmt: skip
    pairs = [fixed_point(float(r)) for r in ratio]
    mult = np.array([p[0] for p in pairs], np.int64)
    shift = np.array([p[1] for p in pairs], np.int64)
    lsh, rsh = np.maximum(shift, 0), np.maximum(-shift, 0) + 31
    if not ident and (lsh.max() > 31 or rsh.max() > 62):
        return None
    return Requant(
        np.ascontiguousarray(add), mult.astype(np.int32), lsh.astype(np.int32),
        rsh.astype(np.int32), int(ozp[0]), lo_i, hi_i, bool(ident),
        _MODES[rounding], _KIND[out_dtype],
    )  # fmt: skip


def _stored(dtype: np.dtype[Any], unsigned: bool) -> tuple[int, int]:
    """(xor mask, zero-point shift) storing ``dtype`` bytes as unsigned or signed."""
    is_unsigned = dtype == np.uint8
    if is_unsigned == unsigned:
        return 0, 0
    return 0x80, (128 if unsigned else -128)


def _round4(k: int) -> int:
    return -(-k // 4) * 4


def _round32(n: int) -> int:
    return -(-n // 32) * 32


def pack_cols(
    lib: Any, src: np.ndarray, signed: bool, out: np.ndarray, sums: np.ndarray, kmajor: bool = False
) -> Run:
    """The packing of ``src[N, K]`` (bytes; ``kmajor``: ``src[K, N]``) into ``out`` as
    packed columns of signed or unsigned bytes, with their sums."""
    n, k = src.shape[::-1] if kmajor else src.shape
    flip, _ = _stored(src.dtype, not signed)
    p = _ptrs(src, out, sums)
    s = np.array(
        [n, k, src.strides[0], _round4(k), _round32(n), flip, int(signed), int(kmajor)], np.int64
    )
    return functools.partial(
        _pack, lib.rk_q_pack_cols, _P(p.ctypes.data), _P(s.ctypes.data), (p, s)
    )


def _pack(fn: Any, p: Any, s: Any, _keep: tuple[Any, ...]) -> None:
    fn(p, s)


def _gemm_sizes(
    m: int, n: int, k: int, ldc: int, rows_unsigned: bool, chan_rows: bool, rq: Requant
) -> list[int]:
    tcols = -(-n // _CB)
    return [m, n, k, _round4(k), _round32(n), ldc, int(rows_unsigned), int(chan_rows),
            _RB, _CB, tcols, *rq.tail()]  # fmt: skip


def conv2d_run(
    attrs: Any, args: Sequence[np.ndarray], out: np.ndarray, scratch: Scratch, rq: Requant | None
) -> Run | None:
    """``qnn.conv2d`` (NCHW / OIHW, constant weight and parameters) into ``out`` with the
    epilogue ``rq`` (``None``: the int32 sums); ``None`` when not handled here."""
    lib = kernels()
    x, w, izp, kzp = args[:4]
    if lib is None or attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW":
        return None
    if attrs.out_layout not in ("", "NCHW") or x.ndim != 4 or w.ndim != 4:
        return None
    if x.dtype.name not in _BYTES or w.dtype.name not in _BYTES or not _const(w, izp, kzp):
        return None
    if not (x.flags.c_contiguous and out.flags.c_contiguous and w.flags.c_contiguous):
        return None
    c = x.shape[1]
    oc, cg, kh, kw = w.shape
    _, _, oh, ow = out.shape
    g = int(attrs.groups)
    rq = rq or plain(oc)
    if out.dtype.name != ("int32" if rq.kind == 2 else out.dtype.name):
        return None
    sh, sw = (int(v) for v in attrs.strides)
    dh, dw = (int(v) for v in attrs.dilation)
    pt, pl = int(attrs.padding[0]), int(attrs.padding[1])
    zx = np.asarray(izp).reshape(-1)
    wz = _channels(np.asarray(kzp, np.int64), oc)
    if zx.size != 1 or wz is None:
        return None
    if g == 1 and cg == c:
        return _conv_gemm(lib, x, w, out, scratch, rq, int(zx[0]), wz, (kh, kw, oh, ow),
                          (sh, sw, pt, pl, dh, dw))  # fmt: skip
    if cg == 1 and g == c and oc % c == 0 and kh * kw <= 64:
        return _conv_dw(lib, x, w, out, scratch, rq, int(zx[0]), wz, (kh, kw, oh, ow),
                        (sh, sw, pt, pl, dh, dw))  # fmt: skip
    return None


def _conv_gemm(
    lib: Any,
    x: np.ndarray,
    w: np.ndarray,
    out: np.ndarray,
    scratch: Scratch,
    rq: Requant,
    zx: int,
    wz: np.ndarray,
    geo: tuple[int, int, int, int],
    steps: tuple[int, int, int, int, int, int],
) -> Run:
    n, c, h, wd = x.shape
    oc = w.shape[0]
    kh, kw, oh, ow = geo
    k = c * kh * kw
    kp, npix = _round4(k), _round32(oh * ow)
    # weights: rows of signed bytes; input: packed columns of unsigned bytes
    wflip, wshift = _stored(w.dtype, False)
    xflip, xshift = _stored(x.dtype, True)
    rows = np.empty((oc, kp), np.uint8)
    rsum = np.empty(oc, np.int32)
    # k = (i, j, c) when the channels come in fours: the columns are then packed four
    # channel rows at a time (native/qnn.c, rk_q_taps_task), else k = (c, i, j)
    order = int(c % 4 == 0)
    wk = np.ascontiguousarray(w.transpose(0, 2, 3, 1)) if order else w
    pr = _ptrs(wk, rows, rsum)
    sr = np.array([oc, k, k, kp, wflip, 1], np.int64)
    lib.rk_q_pack_rows(_P(pr.ctypes.data), _P(sr.ctypes.data))
    zr = (wz + wshift).astype(np.int32)
    zc = np.full(npix, zx + xshift, np.int32)
    cols = scratch.take((kp * npix,), np.uint8)
    # the request may not depend on the zero points' values: a zero point that is a graph
    # input is measured with placeholder values and bound with the real ones
    csum_buf = scratch.take((npix,), np.int32)
    csum = csum_buf if np.any(zr != 0) else None
    isz = out.itemsize
    sh, sw, _, _, dh, dw = steps
    hp, wp = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    xp = scratch.take((c * hp * wp,), np.uint8)
    pim = _ptrs(x, cols, csum, xp)
    sim = np.array(
        [c, h, wd, kh, kw, oh, ow, *steps, kp, npix, zx + xshift, xflip, hp, wp, order], np.int64
    )
    pg = _ptrs(rows, cols, rsum if zx + xshift else None, csum, zr, zc, *rq.ptrs(), out)
    sg = np.array(_gemm_sizes(oc, oh * ow, k, oh * ow, False, True, rq), np.int64)
    policy = get_policy()
    x_img, o_img = c * h * wd * x.itemsize, oc * oh * ow * isz
    keep = (x, w, wk, out, rows, rsum, zr, zc, cols, csum, rq, pim, sim, pg, sg, xp)

    work = oc * k * oh * ow

    def run() -> None:
        threads = threads_for(policy, work)
        for i in range(n):
            pim[0] = address(x) + i * x_img
            pg[10] = address(out) + i * o_img
            lib.rk_q_im2col_run(_P(pim.ctypes.data), _P(sim.ctypes.data), threads)
            lib.rk_q_gemm_run(_P(pg.ctypes.data), _P(sg.ctypes.data), threads)

    run.keep = keep  # type: ignore[attr-defined]
    policy.ensure_applied()
    return run


def _conv_dw(
    lib: Any,
    x: np.ndarray,
    w: np.ndarray,
    out: np.ndarray,
    scratch: Scratch,
    rq: Requant,
    zx: int,
    wz: np.ndarray,
    geo: tuple[int, int, int, int],
    steps: tuple[int, int, int, int, int, int],
) -> Run:
    """Depthwise: the byte kernel (``rk_q_dw8_run``) where it applies, else the int16 one.
    An output that overlaps the input other than channel for channel (the planner may give
    a strided layer's output the input's memory) is written to scratch, then copied."""
    tmp = None
    if np.may_share_memory(out, x) and not (
        out.shape == x.shape and out.dtype == x.dtype and address(out) == address(x)
    ):
        tmp = scratch.take(out.shape, out.dtype)
    target = out if tmp is None else tmp
    # one request for either kernel: which one applies depends on the weight's values,
    # and the arena is measured before a weight that is a graph input has them
    nblocks = min(w.shape[0], 16)
    area = scratch.take((nblocks * max(_dw8_block(geo, steps), _dw16_block(geo, steps)),), np.uint8)
    run = _conv_dw8(lib, x, w, target, area, rq, zx, wz, geo, steps)
    if run is None:
        run = _conv_dw16(lib, x, w, target, area, rq, zx, wz, geo, steps)
    if tmp is None:
        return run
    return functools.partial(_then_copy, run, tmp, out)


def _then_copy(run: Run, src: np.ndarray, dst: np.ndarray) -> None:
    run()
    np.copyto(dst, src)


def _dw8_weights(w: np.ndarray, wz: np.ndarray) -> np.ndarray | None:
    """``w - wz`` as int8 ``[OC, KH, 4]`` (zero past the kernel's width), or ``None`` when
    a value does not fit int8 or the kernel is wider than 4."""
    oc, _, kh, kw = w.shape
    if kw > 4 or kh > 16:
        return None
    d = w.astype(np.int64).reshape(oc, kh, kw) - wz.astype(np.int64).reshape(-1, 1, 1)
    if d.min() < -128 or d.max() > 127:
        return None
    w4 = np.zeros((oc, kh, 4), np.int8)
    w4[:, :, :kw] = d
    return w4


def _dw8_block(geo: tuple[int, int, int, int], steps: tuple[int, ...]) -> int:
    """Bytes of scratch one channel block of the byte depthwise kernel uses."""
    kh, kw, oh, ow = geo
    sh, sw, _, _, dh, dw = steps
    hp, wp = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    return -(-(hp * wp + 64 + 64 + (oh * ow + 16) * 4) // 64) * 64


def _dw16_block(geo: tuple[int, int, int, int], steps: tuple[int, ...]) -> int:
    """Bytes of scratch one channel block of the int16 depthwise kernel uses."""
    kh, kw, oh, ow = geo
    sh, sw, _, _, dh, dw = steps
    hp, wp = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    q, r = -(-wp // sw), -(-hp // sh) + 1
    return -(-(sh * sw * r * q * 2 + 192 + (oh * q + 16) * 4) // 64) * 64


def _conv_dw8(
    lib: Any,
    x: np.ndarray,
    w: np.ndarray,
    out: np.ndarray,
    area: np.ndarray,
    rq: Requant,
    zx: int,
    wz: np.ndarray,
    geo: tuple[int, int, int, int],
    steps: tuple[int, int, int, int, int, int],
) -> Run | None:
    kh, kw, oh, ow = geo
    sh, sw, _, _, dh, dw = steps
    if not lib.rk_q_dw8_ok() or 15 * sw + (kw - 1) * dw > 63:
        return None
    w4 = _dw8_weights(w, wz)
    if w4 is None:
        return None
    _, c, h, wd = x.shape
    oc = w.shape[0]
    flip, shift = _stored(x.dtype, True)
    zs = zx + shift  # the stored input zero point: the plane's padding
    # sum (x' - zs) w' = sum x' w' - zs * sum w': the second part joins the epilogue's add
    wsum = w4.astype(np.int64).reshape(oc, -1).sum(axis=1)
    add = ((rq.add.astype(np.int64) - zs * wsum) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    hp, wp = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    per_block = _dw8_block(geo, steps)
    nblocks = min(oc, 16)
    p = _ptrs(x, w4, out, add, rq.mult, rq.lsh, rq.rsh, area)
    s = [c, h, wd, oc, kh, kw, oh, ow, *steps, flip, zs, nblocks, per_block, oc // c, wp, hp,
         *rq.tail()]  # fmt: skip
    sa = np.array(s, np.int64)
    work = oc * oh * ow * kh * 4
    return _per_image(lib.rk_q_dw8_run, x, out, p, sa, work, (w4, add, area, rq))


def _conv_dw16(
    lib: Any,
    x: np.ndarray,
    w: np.ndarray,
    out: np.ndarray,
    area: np.ndarray,
    rq: Requant,
    zx: int,
    wz: np.ndarray,
    geo: tuple[int, int, int, int],
    steps: tuple[int, int, int, int, int, int],
) -> Run:
    _, c, h, wd = x.shape
    oc = w.shape[0]
    kh, kw, oh, ow = geo
    per_block = _dw16_block(geo, steps)
    nblocks = min(oc, 16)
    wzp = np.ascontiguousarray(wz, np.int32)
    p = _ptrs(x, w, out, *rq.ptrs(), wzp, area)
    s = [c, h, wd, oc, kh, kw, oh, ow, *steps, int(x.dtype == np.int8), int(w.dtype == np.int8),
         zx, nblocks, per_block, oc // c, *rq.tail()]  # fmt: skip
    sa = np.array(s, np.int64)
    work = oc * oh * ow * kh * kw * 8  # int16 taps: slower per multiply-add than VNNI
    return _per_image(lib.rk_q_dw_run, x, out, p, sa, work, (w, wzp, area, rq))


def _per_image(
    kernel: Any,
    x: np.ndarray,
    out: np.ndarray,
    p: np.ndarray,
    sa: np.ndarray,
    work: int,
    keep: tuple[Any, ...],
) -> Run:
    """A run calling ``kernel(pointers, sizes, threads)`` once per image of the batch, the
    input and output pointers (``p[0]``, ``p[2]``) moved to that image; ``keep`` holds
    what the pointers point into alive."""
    policy = get_policy()
    x_img, o_img = x[0].nbytes, out[0].nbytes

    def run() -> None:
        threads = threads_for(policy, work)
        for i in range(x.shape[0]):
            p[0] = address(x) + i * x_img
            p[2] = address(out) + i * o_img
            kernel(_P(p.ctypes.data), _P(sa.ctypes.data), threads)

    run.keep = (x, out, p, sa, *keep)  # type: ignore[attr-defined]
    policy.ensure_applied()
    return run


def dense_run(
    args: Sequence[np.ndarray], out: np.ndarray, scratch: Scratch, rq: Requant | None
) -> Run | None:
    """``qnn.dense`` (the weight packed once when it is a constant; the input zero point
    may be computed at run time, as dynamic quantization does, when there is no
    requantize) into ``out`` with the epilogue ``rq`` (``None``: the int32 sums), per
    output feature."""
    lib = kernels()
    x, w, izp, kzp = args[:4]
    if lib is None or x.dtype.name not in _BYTES or w.dtype.name not in _BYTES:
        return None
    if w.ndim != 2 or x.ndim < 2 or not _const(kzp) or (rq is not None and not _const(izp)):
        return None
    if not (x.flags.c_contiguous and out.flags.c_contiguous and w.flags.c_contiguous):
        return None
    nout, k = w.shape
    rq = rq or plain(nout)
    zx = np.asarray(izp).reshape(-1)
    wz = _channels(np.asarray(kzp, np.int64), nout)
    if out.dtype.name != ("int32" if rq.kind == 2 else out.dtype.name):
        return None
    if zx.size != 1 or wz is None:
        return None
    x2 = x.reshape(-1, k)
    m = x2.shape[0]
    kp, np_ = _round4(k), _round32(nout)
    xflip, xshift = _stored(x.dtype, True)
    _, wshift = _stored(w.dtype, False)
    zr = np.full(m, int(zx[0]) + xshift, np.int32)
    zc = np.zeros(np_, np.int32)
    zc[:nout] = wz + wshift
    need_rsum = bool(np.any(zc != 0))
    const_w = _const(w)
    if const_w:
        cols = np.empty(kp * np_, np.uint8)
        csum = np.empty(np_, np.int32)
        pack_cols(lib, w, True, cols, csum)()
    else:
        cols = scratch.take((kp * np_,), np.uint8)
        csum = scratch.take((np_,), np.int32)
    rows = scratch.take((m * kp,), np.uint8)
    rsum_buf = scratch.take((m,), np.int32)  # value-independent request, as in _conv_gemm
    rsum = rsum_buf if need_rsum else None
    pr = _ptrs(x2, rows, rsum)
    sr = np.array([m, k, k, kp, xflip, 0], np.int64)
    dynamic = not _const(izp)
    pg = _ptrs(rows, cols, rsum, csum if zr[0] or dynamic else None, zr, zc, *rq.ptrs(), out)
    sg = np.array(_gemm_sizes(m, nout, k, nout, True, False, rq), np.int64)
    policy = get_policy()
    repack = None if const_w else pack_cols(lib, w, True, cols, csum)
    lo, hi = qrange(x.dtype.name)
    work = m * k * nout
    zview = izp.reshape(-1)
    scales = [(what, a) for what, a in zip(_SCALES, args[4:6], strict=True) if not _const(a)]

    def run() -> None:
        if dynamic:  # the zero point of this run (checked as the reference kernel does)
            z = int(zview[0])
            if not lo <= z <= hi:
                raise ExecutionError(
                    f"qnn.dense: input_zero_point [{z}] is outside the range of "
                    f"{x.dtype.name} [{lo}, {hi}]"
                )
            zr.fill(z + xshift)
        for what, a in scales:
            if not (np.all(np.isfinite(a)) and np.all(a > 0)):
                raise ExecutionError(
                    f"qnn.dense: {what} must be finite and positive, got {a.reshape(-1).tolist()}"
                )
        if repack is not None:
            repack()
        lib.rk_q_pack_rows(_P(pr.ctypes.data), _P(sr.ctypes.data))
        lib.rk_q_gemm_run(_P(pg.ctypes.data), _P(sg.ctypes.data), threads_for(policy, work))

    run.keep = (x, w, out, cols, csum, rows, rsum, zr, zc, rq, pr, sr, pg, sg)  # type: ignore[attr-defined]
    policy.ensure_applied()
    return run


def batch_matmul_run(
    attrs: Any, args: Sequence[np.ndarray], out: np.ndarray, scratch: Scratch, rq: Requant | None
) -> Run | None:
    """``qnn.batch_matmul`` (``y`` as ``[B, N, K]`` with ``transpose_b``, else ``[B, K, N]``;
    per-tensor, constant parameters), batch by batch, into ``out``; ``None`` when not
    handled here."""
    lib = kernels()
    x, y, xzp, yzp = args[:4]
    if lib is None or attrs.transpose_a:
        return None
    if x.dtype.name not in _BYTES or y.dtype.name not in _BYTES or not _const(xzp, yzp):
        return None
    if x.ndim != 3 or y.ndim != 3 or out.ndim != 3:
        return None
    if not (x.flags.c_contiguous and y.flags.c_contiguous and out.flags.c_contiguous):
        return None
    tb = bool(attrs.transpose_b)
    b, m, k = x.shape
    by = y.shape[0]
    nout = y.shape[1] if tb else y.shape[2]
    if by not in (1, b) or np.asarray(xzp).size != 1 or np.asarray(yzp).size != 1:
        return None
    rq = rq or plain(nout)
    if out.dtype.name != ("int32" if rq.kind == 2 else out.dtype.name):
        return None
    kp, np_ = _round4(k), _round32(nout)
    xflip, xshift = _stored(x.dtype, True)
    _, yshift = _stored(y.dtype, False)
    zx = int(np.asarray(xzp).reshape(-1)[0]) + xshift
    zy = int(np.asarray(yzp).reshape(-1)[0]) + yshift
    zr = np.full(m, zx, np.int32)
    zc = np.full(np_, zy, np.int32)
    cols = scratch.take((kp * np_,), np.uint8)
    csum = scratch.take((np_,), np.int32)
    rows = scratch.take((m * kp,), np.uint8)
    rsum = scratch.take((m,), np.int32)
    pr = _ptrs(x, rows, rsum)
    sr = np.array([m, k, k, kp, xflip, 0], np.int64)
    pg = _ptrs(rows, cols, rsum if zy else None, csum if zx else None, zr, zc, *rq.ptrs(), out)
    sg = np.array(_gemm_sizes(m, nout, k, nout, True, False, rq), np.int64)
    policy = get_policy()
    xb, ob = m * k, m * nout * out.itemsize
    packs = [pack_cols(lib, y[i], True, cols, csum, kmajor=not tb) for i in range(by)]

    work = m * k * nout

    def run() -> None:
        threads = threads_for(policy, work)
        for i in range(b):
            if i < by:
                packs[i]()
            pr[0] = address(x) + i * xb
            lib.rk_q_pack_rows(_P(pr.ctypes.data), _P(sr.ctypes.data))
            pg[10] = address(out) + i * ob
            lib.rk_q_gemm_run(_P(pg.ctypes.data), _P(sg.ctypes.data), threads)

    run.keep = (x, y, out, cols, csum, rows, rsum, zr, zc, rq, pr, sr, pg, sg)  # type: ignore[attr-defined]
    policy.ensure_applied()
    return run
