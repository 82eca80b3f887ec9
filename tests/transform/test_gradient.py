"""relay.transform.gradient against hand-derived NumPy gradients, and check_grad."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import UnsupportedFeatureError
from relaykit.ir import IRModule
from relaykit.testing import check_grad
from relaykit.transform import gradient


def _grads(fn, *args):
    g = gradient(fn)
    out, grads = relay.create_executor("debug", mod=IRModule.from_expr(g)).evaluate()(*args)
    return out.numpy(), [x.numpy() for x in grads]


def test_dense_bias_tanh_matches_numpy():
    rng = np.random.RandomState(0)
    xd, wd, bd = (rng.rand(*s).astype("float32") for s in [(3, 4), (5, 4), (5,)])
    x, w, b = (relay.var(n, shape=d.shape) for n, d in zip("xwb", (xd, wd, bd), strict=True))
    fn = relay.Function([x, w, b], relay.tanh(relay.nn.bias_add(relay.nn.dense(x, w), b)))
    out, (gx, gw, gb) = _grads(fn, xd, wd, bd)
    pre = xd @ wd.T + bd
    np.testing.assert_allclose(out, np.tanh(pre), rtol=1e-5)
    d = 1 - np.tanh(pre) ** 2  # output adjoint is ones
    np.testing.assert_allclose(gx, d @ wd, rtol=1e-5)
    np.testing.assert_allclose(gw, d.T @ xd, rtol=1e-5)
    np.testing.assert_allclose(gb, d.sum(axis=0), rtol=1e-5)


def test_broadcast_gradients_are_collapsed():
    rng = np.random.RandomState(1)
    xd, yd = rng.rand(2, 3).astype("float32"), rng.rand(3).astype("float32") + 0.5
    x, y = relay.var("x", shape=(2, 3)), relay.var("y", shape=(3,))
    _, (gx, gy) = _grads(relay.Function([x, y], relay.divide(x, y)), xd, yd)
    np.testing.assert_allclose(gx, np.broadcast_to(1 / yd, (2, 3)), rtol=1e-5)
    np.testing.assert_allclose(gy, (-xd / yd**2).sum(axis=0), rtol=1e-5)


def test_shared_subexpression_and_tuples_accumulate():
    xd = np.array([0.5, -1.0, 2.0], "float32")
    x = relay.var("x", shape=(3,))
    e = relay.exp(x)
    t = relay.Tuple([e, relay.multiply(e, x)])
    body = relay.add(relay.TupleGetItem(t, 0), relay.TupleGetItem(t, 1))
    _, (gx,) = _grads(relay.Function([x], body), xd)
    # d/dx (e^x + x e^x) = e^x (2 + x)
    np.testing.assert_allclose(gx, np.exp(xd) * (2 + xd), rtol=1e-5)


def test_unused_parameter_gets_zeros_and_sum_reduces():
    x, y = relay.var("x", shape=(2, 3)), relay.var("y", shape=(4,))
    xd = np.ones((2, 3), "float32")
    _, (gx, gy) = _grads(relay.Function([x, y], relay.sum(x, axis=1)), xd, np.ones(4, "float32"))
    np.testing.assert_array_equal(gx, np.ones((2, 3)))
    np.testing.assert_array_equal(gy, np.zeros(4))


def test_check_grad_numerical():
    x = relay.var("x", shape=(2, 3, 4))
    check_grad(relay.Function([x], relay.transpose(relay.reshape(x, (6, 4)))))
    s = relay.var("s", shape=(2, 5))
    check_grad(relay.Function([s], relay.nn.softmax(s)), scale=1.0, eps=1e-3, atol=1e-3)


def test_unsupported_nodes_are_named():
    x = relay.var("x", shape=(2,))
    v = relay.var("v")
    c = relay.var("c", shape=(), dtype="bool")
    with pytest.raises(UnsupportedFeatureError, match="If"):
        gradient(relay.Function([x, c], relay.If(c, x, relay.Let(v, x, v))))
    with pytest.raises(UnsupportedFeatureError, match="no gradient"):
        gradient(relay.Function([x], relay.cumsum(x)))
