"""nn.lrn against a direct loop over the channel window."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.op import TypeRelError, nn


def test_lrn_loop(run, tvar):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 5, 2, 2)).astype("float32")
    size, alpha, beta, bias = 3, 1e-2, 0.75, 2.0
    out = run(nn.lrn(tvar("x", (1, 5, 2, 2)), size, 1, bias, alpha, beta), x)
    want = np.empty_like(x)
    for c in range(5):
        lo, hi = max(0, c - (size - 1) // 2), min(4, c + size // 2)
        sq = (x[:, lo : hi + 1] ** 2).sum(axis=1)
        want[:, c] = x[:, c] / (bias + alpha / size * sq) ** beta
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_lrn_rejects_ints(rel, tvar):
    with pytest.raises(TypeRelError, match="floating-point"):
        rel(nn.lrn(tvar("x", (1, 3, 2, 2), "int32")))


def _pool3d_loop(x, k, s, pad, kind, include_pad=False):
    n, c, d, h, w = x.shape
    out_shape = [
        (dim + 2 * pad - kk) // ss + 1 for dim, kk, ss in zip((d, h, w), k, s, strict=True)
    ]
    padded = np.pad(x, ((0, 0), (0, 0)) + ((pad, pad),) * 3, constant_values=np.nan)
    out = np.empty((n, c, *out_shape), "float32")
    for idx in np.ndindex(*out_shape):
        sl = tuple(slice(i * ss, i * ss + kk) for i, ss, kk in zip(idx, s, k, strict=True))
        win = padded[(slice(None), slice(None), *sl)].reshape(n, c, -1)
        if kind == "max":
            out[(slice(None), slice(None), *idx)] = np.nanmax(win, axis=-1)
        elif include_pad:
            out[(slice(None), slice(None), *idx)] = np.nansum(win, axis=-1) / win.shape[-1]
        else:
            out[(slice(None), slice(None), *idx)] = np.nanmean(win, axis=-1)
    return out


@pytest.mark.parametrize(("kind", "include_pad"), [("max", False), ("avg", False), ("avg", True)])
def test_pool3d_matches_loop(run, tvar, kind, include_pad):
    x = np.random.default_rng(2).standard_normal((1, 2, 4, 5, 3)).astype("float32")
    v = tvar("x", (1, 2, 4, 5, 3))
    if kind == "max":
        call = nn.max_pool3d(v, (2, 3, 2), (2, 1, 1), padding=(1, 1, 1))
    else:
        call = nn.avg_pool3d(
            v, (2, 3, 2), (2, 1, 1), padding=(1, 1, 1), count_include_pad=include_pad
        )
    want = _pool3d_loop(x, (2, 3, 2), (2, 1, 1), 1, kind, include_pad)
    np.testing.assert_allclose(run(call, x), want, rtol=1e-5)


def test_pool3d_ceil_mode_last_window_starts_inside(rel, tvar):
    # 5 + 0 pads, k=2, s=2: floor -> 2, ceil -> 3 (the third window starts at 4 < 5)
    out = rel(nn.max_pool3d(tvar("x", (1, 1, 5, 5, 5)), 2, 2, ceil_mode=True))
    assert out.shape == (1, 1, 3, 3, 3)
    # with padding 1 at the start: ceil would give 4, but window 4 would start at 6 >= 5 + 1
    out = rel(
        nn.max_pool3d(tvar("x", (1, 1, 5, 5, 5)), 2, 2, padding=(1, 1, 1, 0, 0, 0), ceil_mode=True)
    )
    assert out.shape == (1, 1, 3, 3, 3)
