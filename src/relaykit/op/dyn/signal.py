"""Signal operators with run-time lengths: windows, DFT and STFT (ONNX semantics)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import resolve_dtype, tensor_arg
from relaykit.op.define import TypeRelError, make_call

from ._base import define_dyn_op, scalar_int, unknown

__all__ = [
    "dft",
    "dft_ref",
    "stft",
    "stft_ref",
    "window",
    "window_ref",
]


def _window_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    scalar_int(arg_types, 0, "size")
    return TensorType((AnyDim(),), resolve_dtype(attrs.dtype, "float32", "dtype"))


def window_ref(coeffs: Sequence[float], n: int, periodic: bool, dtype: str) -> np.ndarray:
    """The cosine-sum window ``sum_j (-1)^j a_j cos(2 pi j k / N)`` of length ``n`` (ONNX's
    Hann ``[0.5, 0.5]``, Hamming ``[25/46, 21/46]``, Blackman ``[0.42, 0.5, 0.08]``); ``N``
    is ``n`` for a periodic window, ``n - 1`` for a symmetric one."""
    denom = n if periodic else n - 1
    k = np.arange(max(n, 0), dtype=np.float64)
    w = np.zeros(k.size)
    for j, a in enumerate(coeffs):
        w = w + ((-1) ** j) * a * np.cos(2 * np.pi * j * k / max(denom, 1))
    return w.astype(dtype)


define_dyn_op(
    "dyn.window",
    1,
    _window_rel,
    kernel=lambda ins, attrs: window_ref(
        attrs.coeffs,
        int(np.asarray(ins[0]).reshape(-1)[0]),
        bool(attrs.periodic),
        attrs.dtype or "float32",
    ),
    attrs={"coeffs": (0.5, 0.5), "periodic": True, "dtype": "float32"},
    doc="A cosine-sum window (Hann, Hamming, Blackman) of a run-time length.",
)


def window(
    size: Expr, coeffs: Sequence[float], periodic: bool = True, dtype: str = "float32"
) -> Call:
    """The cosine-sum window with ``coeffs`` of the run-time ``size``."""
    return make_call(
        "dyn.window",
        [size],
        coeffs=tuple(float(c) for c in coeffs),
        periodic=bool(periodic),
        dtype=dtype,
    )


# -- DFT and STFT with run-time lengths and axes ---------------------------------------------------


def _complex_of(x: np.ndarray) -> np.ndarray:
    """A (..., 1|2) real tensor as complex values (..., ) (the last axis: real, imag), in
    the input's precision (complex64 for float32), as ONNX's reference computes."""
    if x.shape[-1] == 1:
        return x[..., 0]
    return x[..., 0] + 1j * x[..., 1]


def _real_pair(z: np.ndarray) -> np.ndarray:
    return np.stack([np.real(z), np.imag(z)], axis=-1)


def dft_ref(
    x: np.ndarray, length: int | None, axis: int, inverse: bool, onesided: bool
) -> np.ndarray:
    """ONNX ``DFT`` of a (..., 1|2) signal along ``axis`` (of the full rank): the FFT,
    its inverse (normalised by the length), one-sided forward (the first n//2 + 1 bins)
    or one-sided inverse (a real signal, last axis 1)."""
    a = axis % x.ndim
    if a == x.ndim - 1:
        raise TypeRelError("the DFT axis cannot be the last (real/imaginary) axis")
    z = _complex_of(x)
    if length is None:
        length = 2 * (x.shape[a] - 1) if inverse and onesided else x.shape[a]
    if length <= 0:
        raise TypeRelError(f"the DFT length {length} must be positive")
    if inverse and onesided:
        out = np.fft.irfft(z, n=length, axis=a)[..., None]
    elif inverse:
        out = _real_pair(np.fft.ifft(z, n=length, axis=a))
    else:
        out = _real_pair(np.fft.fft(z, n=length, axis=a))
        if onesided:
            out = np.take(out, np.arange(out.shape[a] // 2 + 1), axis=a)
    return np.ascontiguousarray(out.astype(x.dtype))


def _dft_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    x = tensor_arg(arg_types, 0, "data")
    tensor_arg(arg_types, 1, "dft_length")
    scalar_int(arg_types, 2, "axis")
    last = 1 if attrs.inverse and attrs.onesided else 2
    return TensorType((*unknown(x.ndim - 1), last), x.dtype)


def _dft_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    length = np.asarray(ins[1]).reshape(-1)
    n = int(length[0]) if length.size else None
    axis = int(np.asarray(ins[2]).reshape(-1)[0])
    return dft_ref(np.asarray(ins[0]), n, axis, bool(attrs.inverse), bool(attrs.onesided))


define_dyn_op(
    "dyn.dft",
    3,
    _dft_rel,
    kernel=_dft_kernel,
    attrs={"inverse": False, "onesided": False},
    doc="ONNX DFT along a run-time axis with a run-time length (empty: the axis' size).",
)


def dft(
    data: Expr, length: Expr, axis: Expr, inverse: bool = False, onesided: bool = False
) -> Call:
    """ONNX ``DFT`` of ``data`` along the run-time ``axis`` (``length`` empty: the axis'
    size)."""
    return make_call(
        "dyn.dft", [data, length, axis], inverse=bool(inverse), onesided=bool(onesided)
    )


def stft_ref(
    signal: np.ndarray, step: int, window: np.ndarray | None, length: int | None, onesided: bool
) -> np.ndarray:
    """ONNX ``STFT``: frames of ``length`` (else the window's) every ``step`` samples of a
    (batch, n, 1|2) signal, windowed, each transformed: (batch, frames, bins, 2)."""
    flen = length if length is not None else (window.shape[0] if window is not None else 0)
    if step <= 0 or flen <= 0:
        raise TypeRelError(f"frame_step ({step}) and frame_length ({flen}) must be positive")
    frames = 1 + (signal.shape[1] - flen) // step
    idx = np.arange(max(frames, 0))[:, None] * step + np.arange(flen)[None, :]
    framed = signal[:, idx]  # (batch, frames, flen, comps)
    if window is not None:
        framed = framed * window.reshape(1, 1, flen, 1)
    return dft_ref(framed.astype(signal.dtype), None, 2, False, onesided)


def _stft_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    x = tensor_arg(arg_types, 0, "signal")
    return TensorType((x.shape[0], AnyDim(), AnyDim(), 2), x.dtype)


def _stft_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    window = np.asarray(ins[2]) if attrs.has_window else None
    length = np.asarray(ins[3]).reshape(-1)
    return stft_ref(
        np.asarray(ins[0]),
        int(np.asarray(ins[1]).reshape(-1)[0]),
        window,
        int(length[0]) if length.size else None,
        bool(attrs.onesided),
    )


define_dyn_op(
    "dyn.stft",
    4,
    _stft_rel,
    kernel=_stft_kernel,
    attrs={"onesided": True, "has_window": False},
    doc="ONNX STFT with a run-time frame step and frame length.",
)


def stft(
    signal: Expr, step: Expr, window: Expr, length: Expr, onesided: bool, has_window: bool
) -> Call:
    """ONNX ``STFT`` with run-time ``step`` and ``length`` (empty: the window's)."""
    return make_call(
        "dyn.stft",
        [signal, step, window, length],
        onesided=bool(onesided),
        has_window=bool(has_window),
    )
