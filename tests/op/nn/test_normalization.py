"""nn.batch_norm and nn.layer_norm; nn.lrn against a direct loop over the channel window."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relaykit.ir import TensorType, TupleGetItem, TupleType, TupleWrapper
from relaykit.op import TypeRelError, nn


def test_batch_norm(run, rel, tvar, rng):
    x = rng.standard_normal((2, 3, 2, 2)).astype("float32")
    gamma, beta, mean = (rng.standard_normal(3).astype("float32") for _ in range(3))
    var = rng.uniform(0.5, 2.0, 3).astype("float32")
    args = [tvar(n, (3,)) for n in ("g", "b", "m", "v")]
    bn = nn.batch_norm(tvar("x", x.shape), *args, epsilon=1e-3)
    assert isinstance(bn, TupleWrapper) and len(bn) == 3 and isinstance(bn[0], TupleGetItem)
    call = bn.astuple()
    vec = TensorType((3,))
    assert rel(call) == TupleType([TensorType(x.shape), vec, vec])
    out, m_out, v_out = run(call, x, gamma, beta, mean, var)
    for c in range(3):
        scale = gamma[c] / math.sqrt(var[c] + 1e-3)
        np.testing.assert_allclose(
            out[:, c], (x[:, c] - mean[c]) * scale + beta[c], rtol=1e-5, atol=1e-6
        )
    assert m_out.tolist() == mean.tolist() and v_out.tolist() == var.tolist()
    no_scale = nn.batch_norm(tvar("x", x.shape), *args, center=False, scale=False).astuple()
    out2 = run(no_scale, x, gamma, beta, mean, var)[0]
    np.testing.assert_allclose(
        out2[:, 1], (x[:, 1] - mean[1]) / math.sqrt(var[1] + 1e-5), rtol=1e-5
    )
    with pytest.raises(
        TypeRelError, match=r"moving_var \(axis 1\) must be Tensor\[\(3\), float32\]"
    ):
        rel(nn.batch_norm(tvar("x", x.shape), *args[:3], tvar("v", (4,))).astuple())


def test_layer_norm(run, rel, tvar, rng):
    x = rng.standard_normal((2, 5)).astype("float32")
    g = rng.standard_normal(5).astype("float32")
    b = rng.standard_normal(5).astype("float32")
    out = run(nn.layer_norm(tvar("x", (2, 5)), tvar("g", (5,)), tvar("b", (5,))), x, g, b)
    for i in range(2):
        row = [float(t) for t in x[i]]
        mu = sum(row) / 5
        var = sum((t - mu) ** 2 for t in row) / 5
        want = [
            (t - mu) / math.sqrt(var + 1e-5) * float(g[k]) + float(b[k]) for k, t in enumerate(row)
        ]
        assert out[i].tolist() == pytest.approx(want, rel=1e-4, abs=1e-5)
    with pytest.raises(TypeRelError, match="gamma"):
        rel(nn.layer_norm(tvar("x", (2, 5)), tvar("g", (2,)), tvar("b", (5,))))


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
