"""The host kernel table's QNN entries: ``qnn.conv2d``, ``qnn.dense``,
``qnn.batch_matmul`` (int32 sums), ``qnn.requantize``, ``qnn.quantize``,
``qnn.dequantize`` and ``qnn.add`` on the native integer kernels of
:mod:`relaykit.backends.host.qnn`; every case they do not take (parameters computed at
run time, per-channel output zero points, other dtypes) binds the reference kernel.

>>> from relaykit.backends.host.table import has_host_kernel
>>> has_host_kernel("qnn.requantize")
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.backends.host import qnn as hq
from relaykit.backends.host.native import address
from relaykit.backends.host.table import Run, Scratch, register_host_kernel
from relaykit.ir.attrs import Attrs
from relaykit.op.qnn._common import qrange

__all__ = ["requantize_of"]

_BYTES = ("int8", "uint8")


@register_host_kernel("qnn.conv2d")
def _conv2d(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    if outs[0].dtype != np.int32 or not hq._const(*args[2:]):
        return None
    return hq.conv2d_run(attrs, args, outs[0], scratch, None)


@register_host_kernel("qnn.dense")
def _dense(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    if outs[0].dtype != np.int32 or not hq._const(*args[2:]):
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
    from relaykit.op.qnn.quantize import resolve_compute_dtype, resolve_rounding

    if resolve_compute_dtype(attrs.compute_dtype) != "int64" or not hq._const(*params):
        return None
    isc, izp, osc, ozp = params
    rounding = resolve_rounding(attrs.rounding)
    out_dtype = str(attrs.out_dtype)
    return hq.requant_params(channels, bias, isc, izp, osc, ozp, rounding, out_dtype, lo, hi)


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
    c = _channel_count(x.shape, axis, *args[1:])
    rq = None if c is None else requantize_of(attrs, list(args[1:]), c)
    if rq is None:
        return None
    outer, c, inner = _split(x.shape, axis, c)
    in_kind = {"int8": 0, "uint8": 1, "int32": 2}[x.dtype.name]
    p = hq._ptrs(x, out, *rq.ptrs())
    return hq._call(lib.rk_q_requant_run, p, [outer, c, inner, in_kind, *rq.tail()], (x, out, rq))


@register_host_kernel("qnn.quantize")
def _quantize(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
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
    return hq._call(lib.rk_q_quant_run, p, [outer, c, inner, rounding, lo, hi, kind], (x, out, s, z))


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
    return hq._call(lib.rk_q_dequant_run, p, [outer, c, inner, kind], (x, out, s, z))


def _move(lib: Any, s: np.ndarray, z: np.ndarray, os: np.ndarray, oz: np.ndarray) -> list[int]:
    """qnn.add's move of one operand to the output parameters: add, mult, lsh, rsh, how."""
    if np.array_equal(s, os) and np.array_equal(z, oz):
        return [0, 0, 0, 0, 1]
    rq = hq.requant_params(1, None, s, z, os, oz, "UPWARD", "int32")
    if rq is None:
        return []
    how = 2 if rq.ident else 0
    return [int(rq.add[0]), int(rq.mult[0]), int(rq.lsh[0]), int(rq.rsh[0]), how]


@register_host_kernel("qnn.add")
def _add(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    lib = hq.kernels()
    a, b = args[0], args[1]
    out = outs[0]
    params = [np.asarray(v) for v in args[2:]]
    if lib is None or a.dtype.name not in _BYTES or a.dtype != b.dtype or out.dtype != a.dtype:
        return None
    if a.shape != b.shape or a.shape != out.shape or any(v.size != 1 for v in params):
        return None
    if not (a.flags.c_contiguous and b.flags.c_contiguous and out.flags.c_contiguous):
        return None
    if not hq._const(*args[2:]):
        return None
    ls, lz, rs, rz, os, oz = params
    ma, mb = _move(lib, ls, lz, os, oz), _move(lib, rs, rz, os, oz)
    if not ma or not mb:
        return None
    lo, hi = qrange(a.dtype.name)
    kind = 0 if a.dtype == np.int8 else 1
    p = np.array([address(a), address(b), address(out)], np.uintp)
    sizes = [a.size, kind, lo, hi, int(oz.reshape(-1)[0]), *ma, *mb]
    return hq._call(lib.rk_q_add_run, p, sizes, (a, b, out))
