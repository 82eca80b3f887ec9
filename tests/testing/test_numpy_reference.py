"""The NumPy reference's layers against SciPy and textbook definitions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

signal = pytest.importorskip("scipy.signal")


def test_conv2d_matches_scipy_correlate(np_ref: Any) -> None:
    rng = np.random.RandomState(0)
    x = rng.randn(2, 3, 9, 8)
    w = rng.randn(4, 3, 3, 2)
    out = np_ref.conv2d(x, w, stride=2, pad=1)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for n in range(2):
        for o in range(4):
            full = sum(signal.correlate2d(xp[n, c], w[o, c], mode="valid") for c in range(3))
            np.testing.assert_allclose(out[n, o], full[::2, ::2], rtol=1e-12, atol=1e-12)


def test_grouped_conv2d_is_per_group_convolution(np_ref: Any) -> None:
    rng = np.random.RandomState(1)
    x = rng.randn(1, 6, 5, 5)
    w = rng.randn(6, 1, 3, 3)  # depthwise
    out = np_ref.conv2d(x, w, pad=1, groups=6)
    for c in range(6):
        single = np_ref.conv2d(x[:, c : c + 1], w[c : c + 1], pad=1)
        np.testing.assert_allclose(out[:, c : c + 1], single)


def test_max_pool_and_batch_norm(np_ref: Any) -> None:
    x = np.arange(16.0).reshape(1, 1, 4, 4) - 8
    np.testing.assert_array_equal(np_ref.max_pool(x, 2, 2)[0, 0], [[-3, -1], [5, 7]])
    padded = np_ref.max_pool(x, 3, 2, pad=1)[0, 0]
    np.testing.assert_array_equal(padded, [[-3, -1], [5, 7]])
    p = {
        "b_gamma": np.array([2.0]),
        "b_beta": np.array([1.0]),
        "b_moving_mean": np.array([3.0]),
        "b_moving_var": np.array([4.0]),
    }
    y = np_ref.batch_norm(np.full((1, 1, 1, 1), 7.0), p, "b", eps=0.0)
    assert y.item() == pytest.approx((7 - 3) / 2 * 2 + 1)
    y = np_ref.batch_norm(np.full((1, 1, 1, 1), 7.0), p, "b", eps=0.0, scale=False)
    assert y.item() == pytest.approx((7 - 3) / 2 + 1)


def test_softmax_rows_sum_to_one(np_ref: Any) -> None:
    s = np_ref.softmax(np.array([[1000.0, 1000.0], [0.0, np.log(3.0)]]))
    np.testing.assert_allclose(s, [[0.5, 0.5], [0.25, 0.75]])
