"""stft against NumPy's FFT of the windowed frames."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.ir import IRModule

RNG = np.random.default_rng(0)


def _run(outs, params, *arrays, kind="vm"):
    body = outs.astuple() if hasattr(outs, "astuple") else outs
    mod = IRModule.from_expr(relay.Function(params, body))
    res = relay.create_executor(kind, mod=mod).evaluate()(*arrays)
    return res.numpy() if hasattr(res, "numpy") else [r.numpy() for r in res]


@pytest.mark.parametrize("onesided", [True, False])
def test_stft_matches_numpy_fft(onesided):
    sig = RNG.standard_normal((2, 20)).astype("float32")
    n_fft, hop = 8, 3
    win = np.hanning(6).astype("float32")
    d = relay.var("d", shape=sig.shape)
    w = relay.var("w", shape=win.shape)
    out = _run(relay.op.stft(d, n_fft, hop, 6, w, False, onesided), [d, w], sig, win)
    padded = np.concatenate([np.zeros(1), win, np.zeros(1)])  # centred in n_fft
    frames = [sig[:, s : s + n_fft] * padded for s in range(0, 20 - n_fft + 1, hop)]
    spec = np.fft.fft(np.stack(frames, axis=1), axis=-1)  # (batch, frames, n_fft)
    spec = spec[..., : n_fft // 2 + 1] if onesided else spec
    want = np.stack([spec.real, spec.imag], axis=-1).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
