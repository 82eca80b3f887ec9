"""relay.testing.synthetic against a NumPy forward pass; ChangeBatch on it."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.testing import synthetic
from relaykit.transform import ChangeBatch


def _softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _conv3x3(x, w):
    n, _, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i : i + h, j : j + wd], w[:, :, i, j])
    return out


def test_synthetic_forward_matches_numpy():
    mod, params = synthetic.get_workload()
    p = {k: v.numpy().astype(np.float64) for k, v in params.items()}
    x = np.random.RandomState(0).rand(1, 3, 24, 12)

    def round_(a, dense, conv):
        d = np.maximum(a.reshape(-1, 12) @ p[dense].T, 0).reshape(x.shape)
        return d + _softmax(_conv3x3(a, p[conv]), axis=-1)

    h = round_(x, "dense_weight", "conv_weight") + p["bias"].reshape(1, 3, 1, 1)
    scale = p["batch_norm_gamma"] / np.sqrt(p["batch_norm_moving_var"] + 1e-5)
    h = (h - p["batch_norm_moving_mean"].reshape(1, 3, 1, 1)) * scale.reshape(1, 3, 1, 1)
    h = h + p["batch_norm_beta"].reshape(1, 3, 1, 1)
    want = round_(h, "dense2_weight", "conv2_weight")
    got = relay.create_executor(mod=mod).evaluate()(x.astype("float32"), **params).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_change_batch_retypes_main():
    mod, _ = synthetic.get_workload()
    new = ChangeBatch({mod["main"].params[0]: 0}, batch_size=5)(mod)
    assert tuple(new["main"].checked_type.ret_type.shape) == (5, 3, 24, 12)
    assert tuple(mod["main"].checked_type.ret_type.shape) == (1, 3, 24, 12)
