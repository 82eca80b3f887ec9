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
