"""sequence_mask, matrix_set_diag and nn.nll_loss against loops written here in NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import ArgumentError
from relaykit.ir import IRModule


def _run(fn, *args):
    mod = relay.transform.InferType()(IRModule.from_expr(fn))
    return mod["main"].ret_type, relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()


@pytest.mark.parametrize("shape,axis", [((6, 3), 0), ((3, 6, 2), 1)])
def test_sequence_mask(shape, axis):
    rng = np.random.default_rng(0)
    data = rng.random(shape).astype("float32")
    batch = shape[1 - axis]
    lengths = np.array([0, 2, 5][:batch], "int64")
    x = relay.var("x", shape=shape)
    n = relay.var("n", shape=(batch,), dtype="int64")
    _, out = _run(relay.Function([x, n], relay.sequence_mask(x, n, -1.5, axis)), data, lengths)
    want = data.copy()
    for b in range(batch):
        for t in range(shape[axis]):
            if t >= lengths[b]:
                idx = (t, b) if axis == 0 else (b, t)
                want[idx] = -1.5
    np.testing.assert_array_equal(out, want)


def _set_band(data, diag, k_lo, k_hi, super_right, sub_right):
    out = data.copy()
    rows, cols = data.shape[-2:]
    for k in range(k_lo, k_hi + 1):
        n = min(cols - max(k, 0), rows + min(k, 0))
        right = super_right if k >= 0 else sub_right
        off = diag.shape[-1] - n if right else 0
        for i in range(n):
            r, c = (i, i + k) if k >= 0 else (i - k, i)
            out[..., r, c] = diag[..., k_hi - k, i + off]
    return out


@pytest.mark.parametrize("align", ["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"])
def test_matrix_set_diag_band(align):
    rng = np.random.default_rng(1)
    data = rng.integers(-9, 9, (2, 3, 4)).astype("int32")
    diag = rng.integers(-9, 9, (2, 4, 3)).astype("int32")
    x = relay.var("x", shape=data.shape, dtype="int32")
    d = relay.var("d", shape=diag.shape, dtype="int32")
    ty, out = _run(relay.Function([x, d], relay.matrix_set_diag(x, d, (-1, 2), align)), data, diag)
    sup, sub = (p == "RIGHT" for p in align.split("_"))
    np.testing.assert_array_equal(out, _set_band(data, diag, -1, 2, sup, sub))
    assert tuple(ty.shape) == data.shape


def test_matrix_set_diag_single_offset():
    data = np.zeros((2, 3, 4), "float32")
    diag = np.arange(6, dtype="float32").reshape(2, 3)
    x, d = relay.var("x", shape=data.shape), relay.var("d", shape=diag.shape)
    _, out = _run(relay.Function([x, d], relay.matrix_set_diag(x, d, 1)), data, diag)
    want = data.copy()
    for i in range(3):
        want[:, i, i + 1] = diag[:, i]
    np.testing.assert_array_equal(out, want)
    with pytest.raises(ArgumentError, match="align"):
        relay.matrix_set_diag(x, d, 0, "UP_DOWN")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    rng = np.random.default_rng(2)
    pred = rng.random((4, 3, 2)).astype("float64")
    target = np.array([[0, 2], [1, 1], [2, -100], [0, 1]], "int32")
    weights = rng.random(3).astype("float64")
    p = relay.var("p", shape=pred.shape, dtype="float64")
    t = relay.var("t", shape=target.shape, dtype="int32")
    w = relay.var("w", shape=(3,), dtype="float64")
    fn = relay.Function([p, t, w], relay.nn.nll_loss(p, t, w, reduction))
    ty, out = _run(fn, pred, target, weights)
    losses = np.zeros(target.shape)
    used = 0.0
    for n in range(4):
        for j in range(2):
            c = target[n, j]
            if c != -100:
                losses[n, j] = -pred[n, c, j] * weights[c]
                used += weights[c]
    want = {"none": losses, "sum": losses.sum(), "mean": losses.sum() / used}[reduction]
    np.testing.assert_allclose(out, want, rtol=1e-12)
    assert tuple(ty.shape) == (target.shape if reduction == "none" else ())
