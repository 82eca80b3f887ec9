"""Signal operators: ``stft`` (TVM's ``relay.stft``), the short-time Fourier transform.
Their dynamic twins (ONNX's ``STFT``, ``DFT`` and windows with run-time lengths) are in
:mod:`relaykit.op.dyn.signal`.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 16))
>>> stft(x, n_fft=8, hop_length=4).attrs.win_length
8
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, const
from relaykit.ir.types import AnyDim, TensorType, Type

from ._relations import static, tensor_arg
from .define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["stft"]


def _stft_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    tensor_arg(arg_types, 1, "window")
    if data.ndim not in (1, 2):
        raise TypeRelError(f"stft takes a 1-D signal or a 2-D batch of signals, got {data}")
    n_fft, hop = int(attrs.n_fft), int(attrs.hop_length)
    if n_fft < 1 or hop < 1:
        raise TypeRelError(f"stft needs n_fft >= 1 and hop_length >= 1, got {n_fft}, {hop}")
    rows = n_fft // 2 + 1 if attrs.onesided else n_fft
    length = data.shape[-1]
    cols = (length - n_fft) // hop + 1 if static(length) else AnyDim()
    return TensorType((*data.shape[:-1], rows, cols, 2), data.dtype)


def _stft_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, window = ins
    n_fft, hop = int(attrs.n_fft), int(attrs.hop_length)
    win = np.asarray(window, dtype=np.float64).reshape(-1)[: int(attrs.win_length)]
    left = (n_fft - win.shape[0]) // 2
    win = np.pad(win, (left, n_fft - win.shape[0] - left))  # centred in n_fft
    sig = np.asarray(data, dtype=np.float64)
    cols = (sig.shape[-1] - n_fft) // hop + 1
    starts = np.arange(cols) * hop
    frames = sig[..., starts[:, None] + np.arange(n_fft)] * win  # (..., cols, n_fft)
    rows = n_fft // 2 + 1 if attrs.onesided else n_fft
    k, w = np.arange(n_fft), np.arange(rows)
    angle = 2 * np.pi * np.outer(w, k) / n_fft  # (rows, n_fft)
    real = np.einsum("...ck,wk->...wc", frames, np.cos(angle))
    imag = -np.einsum("...ck,wk->...wc", frames, np.sin(angle))
    out = np.stack([real, imag], axis=-1)
    if attrs.normalized:
        out /= np.sqrt(n_fft)
    return out.astype(data.dtype)


define_op(
    "stft",
    num_inputs=2,
    attrs={
        "n_fft": 1,
        "hop_length": 1,
        "win_length": 1,
        "normalized": False,
        "onesided": True,
    },
    attrs_type_key="relay.attrs.StftAttrs",
    type_rel=_stft_rel,
    compute=_stft_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Short-time Fourier transform: (..., frequencies, frames, [real, imag]).",
)


def stft(
    data: Expr,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Expr | None = None,
    normalized: bool = False,
    onesided: bool = True,
) -> Call:
    """The short-time Fourier transform of ``data`` (signals on the last axis): frames
    of ``n_fft`` samples every ``hop_length`` (``n_fft // 4``), weighted by ``window``
    (ones of ``win_length`` = ``n_fft``, centred), as ``(..., n_fft // 2 + 1 or n_fft,
    frames, 2)`` real/imaginary pairs."""
    n_fft = int(n_fft)
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win_len = n_fft if win_length is None else int(win_length)
    if window is None:
        window = const(np.ones((win_len,), dtype="float32"))
    return make_call(
        "stft",
        [data, window],
        n_fft=n_fft,
        hop_length=hop,
        win_length=win_len,
        normalized=bool(normalized),
        onesided=bool(onesided),
    )
