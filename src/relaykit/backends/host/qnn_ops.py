"""The host kernel table's QNN entries: ``qnn.conv2d``, ``qnn.dense``,
``qnn.batch_matmul`` (int32 sums), ``qnn.requantize``, ``qnn.quantize``,
``qnn.dequantize``, ``qnn.add`` and ``qnn.mul`` on the native integer kernels of
:mod:`relaykit.backends.host.qnn`; every case they do not take (parameters computed at
run time, per-channel output zero points, other dtypes) binds the reference kernel.

>>> from relaykit.backends.host.table import has_host_kernel
>>> has_host_kernel("qnn.requantize")
True
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from relaykit.backends.host import qnn as hq
from relaykit.backends.host.native import address
from relaykit.backends.host.table import Run, Scratch, register_host_kernel, sequence
from relaykit.ir.attrs import Attrs
from relaykit.op.qnn._common import qrange
from relaykit.op.qnn.quantize import resolve_compute_dtype, resolve_rounding

__all__ = ["max_pool2d_run", "requantize_of"]

_BYTES = ("int8", "uint8")


@register_host_kernel("qnn.conv2d")
def _conv2d(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    if outs[0].dtype != np.int32 or not hq._const(*args[2:]):
        return None
    return hq.conv2d_run(attrs, args, outs[0], scratch, None)


@register_host_kernel("qnn.dense")
def _dense(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    # the scales do not enter the int32 sums; the input zero point may be a run-time value
    if outs[0].dtype != np.int32 or not hq._const(args[3]):
        return None
    return hq.dense_run(args, outs[0], scratch, None)


@register_host_kernel("qnn.batch_matmul")
def _batch_matmul(
    attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run | None:
    if outs[0].dtype != np.int32 or not hq._const(*args[2:]):
        return None
    return hq.batch_matmul_run(attrs, args, outs[0], scratch, None)


def _split(shape: tuple[int, ...], axis: int, channels: int) -> tuple[int, int, int]:
    """(outer, channels, inner) of ``shape`` around ``axis`` (per tensor: one channel)."""
    if channels == 1:
        return 1, 1, int(np.prod(shape, dtype=np.int64))
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    return outer, int(shape[axis]), inner


def _channel_count(shape: tuple[int, ...], axis: int, *params: np.ndarray) -> int | None:
    sizes = {np.asarray(p).size for p in params} - {1}
    if not sizes:
        return 1
    if len(sizes) != 1 or not shape or sizes != {shape[axis]}:
        return None
    return int(shape[axis])


def requantize_of(
    attrs: Attrs,
    params: list[np.ndarray],
    channels: int,
    bias: np.ndarray | None = None,
    lo: float = -np.inf,
    hi: float = np.inf,
) -> hq.Requant | None:
    """The native epilogue of a ``qnn.requantize`` call (its attributes, its constant
    ``[input_scale, input_zero_point, output_scale, output_zero_point]``) over
    ``channels``, after ``bias`` and before the clamp ``[lo, hi]``."""
    if not hq._const(*params):
        return None
    isc, izp, osc, ozp = params
    rounding = resolve_rounding(attrs.rounding)
    out_dtype = str(attrs.out_dtype)
    compute = resolve_compute_dtype(attrs.compute_dtype)
    return hq.requant_params(
        channels, bias, isc, izp, osc, ozp, rounding, out_dtype, lo, hi, compute
    )


@register_host_kernel("qnn.requantize")
def _requantize(
    attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run | None:
    lib = hq.kernels()
    x, out = args[0], outs[0]
    if lib is None or x.dtype.name not in (*_BYTES, "int32") or not x.flags.c_contiguous:
        return None
    if not out.flags.c_contiguous or x.ndim == 0:
        return None
    axis = int(attrs.axis) % x.ndim
    count = _channel_count(x.shape, axis, *args[1:])
    rq = None if count is None else requantize_of(attrs, list(args[1:]), count)
    if count is None or rq is None:
        return None
    outer, c, inner = _split(x.shape, axis, count)
    in_kind = {"int8": 0, "uint8": 1, "int32": 2}[x.dtype.name]
    p = hq._ptrs(x, out, *rq.ptrs())
    sizes = [outer, c, inner, in_kind, *rq.tail()]
    return hq._call(lib.rk_q_requant_run, p, sizes, (x, out, rq), x.size)


@register_host_kernel("qnn.quantize")
def _quantize(
    attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run | None:
    lib = hq.kernels()
    x, scale, zp = args
    out = outs[0]
    rounding = {"TONEAREST": 0, "UPWARD": 1, "TONEAREST_EVEN": 2}.get(
        str(attrs.get("rounding", "TONEAREST"))
    )
    if lib is None or rounding is None or x.dtype != np.float32 or x.ndim == 0:
        return None
    if out.dtype.name not in _BYTES or not (x.flags.c_contiguous and out.flags.c_contiguous):
        return None
    if not hq._const(scale, zp) or np.any(np.asarray(scale) <= 0):
        return None
    axis = int(attrs.axis) % x.ndim
    c = _channel_count(x.shape, axis, scale, zp)
    if c is None:
        return None
    outer, c, inner = _split(x.shape, axis, c)
    s = np.ascontiguousarray(np.broadcast_to(np.asarray(scale, np.float32).reshape(-1), (c,)))
    z = np.ascontiguousarray(np.broadcast_to(np.asarray(zp).reshape(-1), (c,)).astype(np.float32))
    lo, hi = qrange(out.dtype.name)
    p = hq._ptrs(x, out, s, z)
    kind = 0 if out.dtype == np.int8 else 1
    return hq._call(
        lib.rk_q_quant_run, p, [outer, c, inner, rounding, lo, hi, kind], (x, out, s, z)
    )


@register_host_kernel("qnn.dequantize")
def _dequantize(
    attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run | None:
    lib = hq.kernels()
    x, scale, zp = args
    out = outs[0]
    if lib is None or x.dtype.name not in _BYTES or out.dtype != np.float32 or x.ndim == 0:
        return None
    if not (x.flags.c_contiguous and out.flags.c_contiguous) or not hq._const(scale, zp):
        return None
    axis = int(attrs.axis) % x.ndim
    c = _channel_count(x.shape, axis, scale, zp)
    if c is None:
        return None
    outer, c, inner = _split(x.shape, axis, c)
    s = np.ascontiguousarray(np.broadcast_to(np.asarray(scale, np.float32).reshape(-1), (c,)))
    z = np.ascontiguousarray(np.broadcast_to(np.asarray(zp).reshape(-1), (c,)).astype(np.int32))
    p = hq._ptrs(x, out, s, z)
    kind = 0 if x.dtype == np.int8 else 1
    return hq._call(lib.rk_q_dequant_run, p, [outer, c, inner, kind], (x, out, s, z), x.size)


def _move(s: np.ndarray, z: np.ndarray, os: np.ndarray, oz: np.ndarray) -> list[int]:
    """A move to the output parameters (requantize UPWARD to int32): add, mult, lsh, rsh,
    how (0 requantize, 1 as it is, 2 zero points only); empty when not exact here."""
    if np.array_equal(s, os) and np.array_equal(z, oz):
        return [0, 0, 0, 0, 1]
    rq = hq.requant_params(1, None, s, z, os, oz, "UPWARD", "int32")
    if rq is None:
        return []
    how = 2 if rq.ident else 0
    return [int(rq.add[0]), int(rq.mult[0]), int(rq.lsh[0]), int(rq.rsh[0]), how]


def _rows(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> tuple[int, bool, bool] | None:
    """(row length, a full, b full) for an elementwise pass where an operand is the full
    output or one trailing block of it broadcast (a bias along the last axes)."""
    n = out.size
    if a.shape == out.shape and b.shape == out.shape:
        return min(n, 16384) or 1, True, True
    for small, full in ((a, b), (b, a)):
        if full.shape != out.shape:
            continue
        dims = list(small.shape)
        while dims and dims[0] == 1:
            dims.pop(0)
        if dims and tuple(dims) == tuple(out.shape[len(out.shape) - len(dims) :]):
            return int(small.size), small is not a, small is not b
    return None


def _binary(op: str, args: list[Any], out: np.ndarray) -> Run | None:
    lib = hq.kernels()
    a, b = args[0], args[1]
    params = [np.asarray(v) for v in args[2:]]
    if lib is None or a.dtype.name not in _BYTES or a.dtype != b.dtype or out.dtype != a.dtype:
        return None
    if any(v.size != 1 for v in params) or not hq._const(*args[2:]) or out.size == 0:
        return None
    if not (a.flags.c_contiguous and b.flags.c_contiguous and out.flags.c_contiguous):
        return None
    fill = None
    if out.size > 1 and (a.size == 1) != (b.size == 1):  # a scalar: a row of it, filled per run
        one = a if a.size == 1 else b
        row = np.empty(min(out.size, 16384), one.dtype)
        fill = functools.partial(np.copyto, row, one.reshape(-1)[0:1])
        a, b = (row, b) if a.size == 1 else (a, row)
        layout: tuple[int, bool, bool] | None = (row.size, a is not row, b is not row)
    else:
        layout = _rows(a, b, out)
    if layout is None:
        return None
    ls, lz, rs, rz, os, oz = params
    if op == "qnn.add":
        ma, mb, mm = _move(ls, lz, os, oz), _move(rs, rz, os, oz), [0, 0, 0, 0, 1]
    else:
        scale = np.float32(np.float32(ls.reshape(-1)[0]) * np.float32(rs.reshape(-1)[0]))
        ma, mb, mm = [0, 0, 0, 0, 1], [0, 0, 0, 0, 1], _move(scale, np.int32(0), os, oz)
    if not (ma and mb and mm):
        return None
    lo, hi = qrange(a.dtype.name)
    kind = 0 if a.dtype == np.int8 else 1
    length, a_full, b_full = layout
    p = np.array([address(a), address(b), address(out)], np.uintp)
    sizes = [out.size, length, int(a_full), int(b_full), kind, int(op == "qnn.mul"), lo, hi,
             int(oz.reshape(-1)[0]), int(lz.reshape(-1)[0]), int(rz.reshape(-1)[0]),
             *ma, *mb, *mm]  # fmt: skip
    run = hq._call(lib.rk_q_binary_run, p, sizes, (a, b, out), out.size)
    return run if fill is None else sequence([fill, run])


@register_host_kernel("qnn.add")
def _add(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    return _binary("qnn.add", args, outs[0])


@register_host_kernel("qnn.mul")
def _mul(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    return _binary("qnn.mul", args, outs[0])


#: the widest padded row the native byte max pool takes (``native/qnn_pool.c``)
_POOL_WMAX = 4096


def max_pool2d_run(
    x: np.ndarray,
    out: np.ndarray,
    pool: tuple[int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int],
) -> Run | None:
    """``nn.max_pool2d`` of int8 / uint8 NCHW ``x`` into ``out`` (padding and ceil mode's
    extra rows hold the dtype's minimum), or ``None`` when the native kernel cannot."""
    lib = hq.kernels()
    if lib is None or x.dtype.name not in _BYTES or x.ndim != 4 or out.dtype != x.dtype:
        return None
    if not (x.flags.c_contiguous and out.flags.c_contiguous):
        return None
    (kh, kw), (sh, sw), (dh, dw), (pt, pl) = pool, strides, dilation, pads
    n, c, h, w = x.shape
    oh, ow = out.shape[2], out.shape[3]
    wp = (ow - 1) * sw + (kw - 1) * dw + 1
    if wp > _POOL_WMAX:
        return None
    flip = 0x80 if x.dtype == np.int8 else 0
    sizes = [n * c, h, w, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw, flip, 0, wp]
    p = hq._ptrs(x, out)
    return hq._call(lib.rk_q_maxpool_run, p, sizes, (x, out), x.size)
