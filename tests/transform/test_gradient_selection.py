"""Gradients of selections, comparisons, reductions and batched products
(relaykit.op.transform_grad) against hand-derived NumPy gradients (float64)."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.ir import IRModule
from relaykit.transform import gradient


def _grads(fn, *args):
    g = gradient(fn)
    out, grads = relay.create_executor("debug", mod=IRModule.from_expr(g)).evaluate()(*args)
    return out.numpy(), [x.numpy() for x in grads]


def _var(name, a):
    return relay.var(name, shape=a.shape, dtype=str(a.dtype))


def test_take_scatters_back_repeated_indices():
    xd = np.arange(12.0).reshape(3, 4)
    idx = np.array([[2, 0], [2, 2]], "int64")
    x, i = _var("x", xd), _var("i", idx)
    _, (gx, gi) = _grads(relay.Function([x, i], relay.take(x, i, axis=0)), xd, idx)
    want = np.zeros_like(xd)
    np.add.at(want, idx.reshape(-1), 1.0)  # each row picked k times gets k
    np.testing.assert_array_equal(gx, want)
    np.testing.assert_array_equal(gi, np.zeros_like(idx))


def test_take_flat_clip_mode():
    xd = np.arange(6.0).reshape(2, 3)
    idx = np.array([7, -1, 4], "int64")  # clip: 7 -> 5, -1 -> 0
    x, i = _var("x", xd), _var("i", idx)
    _, (gx, _) = _grads(relay.Function([x, i], relay.take(x, i, mode="clip")), xd, idx)
    want = np.zeros(6)
    np.add.at(want, np.clip(idx, 0, 5), 1.0)
    np.testing.assert_array_equal(gx, want.reshape(2, 3))


def test_strided_slice_with_steps():
    xd = np.random.RandomState(0).rand(4, 5)
    x = _var("x", xd)
    body = relay.multiply(
        relay.strided_slice(x, [0, 1], [4, 5], [2, 2]), relay.const(3.0, "float64")
    )
    _, (gx,) = _grads(relay.Function([x], body), xd)
    want = np.zeros_like(xd)
    want[0:4:2, 1:5:2] = 3.0
    np.testing.assert_array_equal(gx, want)


def test_gather_nd_and_stack():
    xd = np.random.RandomState(1).rand(2, 3)
    idx = np.array([[0, 1, 1], [2, 0, 2]], "int64")
    x, i = _var("x", xd), _var("i", idx)
    _, (gx, _) = _grads(relay.Function([x, i], relay.gather_nd(x, i)), xd, idx)
    want = np.zeros_like(xd)
    np.add.at(want, (idx[0], idx[1]), 1.0)
    np.testing.assert_array_equal(gx, want)

    y = _var("y", xd)
    w = np.arange(12.0).reshape(2, 2, 3)
    body = relay.multiply(relay.stack([x, y], axis=1), relay.const(w, "float64"))
    _, (gx2, gy2) = _grads(relay.Function([x, y], body), xd, xd)
    np.testing.assert_array_equal(gx2, w[:, 0, :])
    np.testing.assert_array_equal(gy2, w[:, 1, :])


def test_clip_where_and_comparisons():
    xd = np.array([-2.0, -0.5, 0.5, 2.0])
    x = _var("x", xd)
    _, (gx,) = _grads(relay.Function([x], relay.clip(x, -1.0, 1.0)), xd)
    np.testing.assert_array_equal(gx, [0.0, 1.0, 1.0, 0.0])

    cond = np.array([[1], [0]], "int32")
    ad, bd = np.ones((1, 3)), np.ones((2, 3))
    c, a, b = _var("c", cond), _var("a", ad), _var("b", bd)
    _, (gc, ga, gb) = _grads(relay.Function([c, a, b], relay.where(c, a, b)), cond, ad, bd)
    np.testing.assert_array_equal(ga, [[1.0, 1.0, 1.0]])  # only row 0 takes a
    np.testing.assert_array_equal(gb, [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(gc, np.zeros_like(cond))

    _, (g1, g2) = _grads(relay.Function([a, b], relay.less_equal(a, b)), ad, bd)
    np.testing.assert_array_equal(g1, np.zeros_like(ad))
    np.testing.assert_array_equal(g2, np.zeros_like(bd))


def test_max_splits_ties_and_variance():
    xd = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]])
    x = _var("x", xd)
    _, (gx,) = _grads(relay.Function([x], relay.max(x, axis=1)), xd)
    np.testing.assert_array_equal(gx, [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])

    rd = np.random.RandomState(2).rand(3, 4)
    r = _var("r", rd)
    _, (gr,) = _grads(relay.Function([r], relay.variance(r, axis=1, unbiased=True)), rd)
    want = 2 * (rd - rd.mean(axis=1, keepdims=True)) / (4 - 1)  # d var / d x (mean's term is 0)
    np.testing.assert_allclose(gr, want, rtol=1e-10)


def test_batch_matmul_all_transposes():
    rng = np.random.RandomState(3)
    for ta in (False, True):
        for tb in (False, True):
            ad = rng.rand(2, 4, 3) if ta else rng.rand(2, 3, 4)
            bd = rng.rand(2, 5, 4) if tb else rng.rand(2, 4, 5)
            a, b = _var("a", ad), _var("b", bd)
            body = relay.nn.batch_matmul(a, b, transpose_a=ta, transpose_b=tb)
            out, (ga, gb) = _grads(relay.Function([a, b], body), ad, bd)
            am = ad.transpose(0, 2, 1) if ta else ad
            bm = bd.transpose(0, 2, 1) if tb else bd
            np.testing.assert_allclose(out, am @ bm, rtol=1e-10)
            ones = np.ones((2, 3, 5))
            d_am, d_bm = ones @ bm.transpose(0, 2, 1), am.transpose(0, 2, 1) @ ones
            np.testing.assert_allclose(ga, d_am.transpose(0, 2, 1) if ta else d_am, rtol=1e-10)
            np.testing.assert_allclose(gb, d_bm.transpose(0, 2, 1) if tb else d_bm, rtol=1e-10)


def test_arange_and_dyn_reshape():
    s, e, st = (relay.var(n, shape=(), dtype="float64") for n in ("s", "e", "st"))
    vals = [np.array(2.5), np.array(9.5), np.array(1.8)]
    out, (gs, ge, gst) = _grads(
        relay.Function([s, e, st], relay.arange(s, e, st, "float64")), *vals
    )
    n = out.shape[0]
    assert n == int(np.ceil((9.5 - 2.5) / 1.8))
    np.testing.assert_allclose(gs, n)
    np.testing.assert_allclose(ge, 0.0)
    np.testing.assert_allclose(gst, np.arange(n).sum())

    xd = np.random.RandomState(4).rand(2, 6)
    x = _var("x", xd)
    shape = relay.var("shape", shape=(2,), dtype="int64")
    body = relay.multiply(
        relay.reshape(x, shape), relay.const(np.arange(12.0).reshape(3, 4), "float64")
    )
    _, (gx, gsh) = _grads(relay.Function([x, shape], body), xd, np.array([3, 4]))
    np.testing.assert_array_equal(gx, np.arange(12.0).reshape(2, 6))
    np.testing.assert_array_equal(gsh, [0, 0])


def test_let_bound_values_are_differentiated():
    xd = np.array([1.0, 2.0, 3.0])
    x = _var("x", xd)
    v = relay.var("v")
    body = relay.Let(v, relay.multiply(x, x), relay.add(v, v))  # 2 x^2
    _, (gx,) = _grads(relay.Function([x], body), xd)
    np.testing.assert_array_equal(gx, 4 * xd)
