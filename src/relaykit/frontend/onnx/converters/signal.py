"""ONNX converters: signal processing. ``DFT`` as two real matrix products with
constant twiddle matrices, and the windows (``HannWindow``, ``HammingWindow``,
``BlackmanWindow``), which are constants once their size is known."""

from __future__ import annotations

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.proto import onnx_dtype_name
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr
from relaykit.op import dyn

from .common import normalize_axis

__all__: list[str] = []


def _window(ctx: NodeContext, size: Expr, periodic: int, dtype: int, coeffs: list[float]):
    if not ctx.is_constant(size):  # a run-time length
        return dyn.window(size, coeffs, bool(periodic), onnx_dtype_name(dtype, ctx.where))
    n = int(ctx.scalar(size, "size"))
    ctx.check_constant((max(n, 0),), 8, "the window")
    denom = n if periodic else n - 1
    k = np.arange(n, dtype=np.float64)
    w = np.zeros(n)
    for j, a in enumerate(coeffs):
        w = w + ((-1) ** j) * a * np.cos(2 * np.pi * j * k / max(denom, 1))
    return Constant(w.astype(onnx_dtype_name(dtype, ctx.where)))


@converter("HannWindow", 17)
def _hann(ctx: NodeContext, size: Expr, *, output_datatype: int = 1, periodic: int = 1):
    return _window(ctx, size, periodic, output_datatype, [0.5, 0.5])


@converter("HammingWindow", 17)
def _hamming(ctx: NodeContext, size: Expr, *, output_datatype: int = 1, periodic: int = 1):
    return _window(ctx, size, periodic, output_datatype, [25 / 46, 21 / 46])


@converter("BlackmanWindow", 17)
def _blackman(ctx: NodeContext, size: Expr, *, output_datatype: int = 1, periodic: int = 1):
    return _window(ctx, size, periodic, output_datatype, [0.42, 0.5, 0.08])


def _dft(ctx: NodeContext, x: Expr, length: Expr | None, axis: int, inverse: int, onesided: int):
    """A DFT as two real matrix products (in float64, so the result rounds like NumPy's
    FFT); an inverse one-sided DFT (irfft) first rebuilds the Hermitian spectrum."""
    shape = ctx.shape(x)
    nd = len(shape)
    axis = normalize_axis(ctx, axis, nd - 1)
    dt = ctx.dtype(x)
    perm = [i for i in range(nd - 1) if i != axis] + [axis, nd - 1]
    t = op.cast(op.transpose(x, perm), "float64")  # (..., n_in, 1|2)
    lead = ctx.shape(x)[:axis] + ctx.shape(x)[axis + 1 : nd - 1]
    n_in = shape[axis]
    real: Expr = op.reshape(op.strided_slice(t, [0], [1], axes=[nd - 1]), (*lead, n_in))
    imag: Expr | None = None
    if shape[-1] == 2:
        imag = op.reshape(op.strided_slice(t, [1], [2], axes=[nd - 1]), (*lead, n_in))
    real_out = bool(inverse and onesided)
    if real_out:  # irfft: bins 0..m-1 given, the rest are conjugates
        n = 2 * (n_in - 1) if length is None else int(ctx.scalar(length, "dft_length"))
        if n <= 0:
            raise ctx.fail(f"the signal length {n} must be positive")
        ctx.check_constant((n, n), 8, "the DFT matrix")
        idx = np.array(list(range(min(n_in, n))) + [n - k for k in range(n_in, n)], "int64")
        sign = np.array([1.0] * min(n_in, n) + [-1.0] * (n - min(n_in, n)))
        real = op.take(real, Constant(idx), axis=len(lead))
        if imag is not None:
            imag = op.multiply(op.take(imag, Constant(idx), axis=len(lead)), Constant(sign))
        n_in = n
    n = n_in if length is None or real_out else int(ctx.scalar(length, "dft_length"))
    if n_in != n:
        real = _fit(real, n_in, n, len(lead))
        imag = None if imag is None else _fit(imag, n_in, n, len(lead))
    if n <= 0:
        raise ctx.fail(f"the signal length {n} must be positive")
    k_count = n // 2 + 1 if (onesided and not inverse) else n
    ctx.check_constant((k_count, n), 8, "the DFT matrix")
    k = np.arange(k_count)[:, None]
    j = np.arange(n)[None, :]
    theta = 2 * np.pi * k * j / n
    scale = 1.0 / n if inverse else 1.0
    cos = Constant(np.cos(theta) * scale)
    sin = Constant((1.0 if inverse else -1.0) * np.sin(theta) * scale)
    out_shape = (*lead, k_count)

    def mat(v: Expr, w: Constant) -> Expr:
        return op.reshape(op.nn.dense(op.reshape(v, (-1, n)), w), out_shape)

    re = mat(real, cos)
    im = mat(real, sin)
    if imag is not None:
        re = op.subtract(re, mat(imag, sin))
        im = op.add(im, mat(imag, cos))
    y = op.expand_dims(re, -1) if real_out else op.stack([re, im], axis=-1)
    back = [0] * nd
    for pos, src in enumerate(perm):
        back[src] = pos
    return op.cast(op.transpose(y, back), dt)


def _fit(v: Expr, n_in: int, n: int, axis: int) -> Expr:
    if n_in > n:
        return op.strided_slice(v, [0], [n], axes=[axis])
    width = [(0, 0)] * axis + [(0, n - n_in)]
    return op.nn.pad(v, width, Constant(np.array(0.0)))


@converter("DFT", 17)
def _dft_v17(
    ctx: NodeContext,
    x: Expr,
    length: Expr | None = None,
    *,
    axis: int = 1,
    inverse: int = 0,
    onesided: int = 0,
) -> Expr:
    return _dft(ctx, x, length, axis, inverse, onesided)


@converter("DFT", 20)
def _dft_v20(
    ctx: NodeContext,
    x: Expr,
    length: Expr | None = None,
    axis: Expr | None = None,
    *,
    inverse: int = 0,
    onesided: int = 0,
) -> Expr:
    if run_time(ctx, length, axis):  # a run-time axis or length: dyn.dft
        ax = axis if axis is not None else Constant(np.array(-2, "int64"))
        n = length if length is not None else Constant(np.zeros(0, "int64"))
        return dyn.dft(x, n, ax, bool(inverse), bool(onesided))
    a = -2 if axis is None else int(ctx.scalar(axis, "axis"))
    return _dft(ctx, x, length, a, inverse, onesided)


def run_time(ctx: NodeContext, *inputs: Expr | None) -> bool:
    """Whether any of the given inputs is only known at run time."""
    return not all(ctx.is_constant(e) for e in inputs if e is not None)
