"""log10, trunc_divide, trunc_mod, cast_like, slice_like, nn.l2_normalize and
annotation.checkpoint against NumPy, and their printed calls parsed back."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit
from relaykit import op, relay
from relaykit.op import TypeRelError


def test_log10_trunc_divide_mod(run, tvar):
    x = np.array([1.0, 10.0, 1000.0], "float32")
    np.testing.assert_allclose(run(op.log10(tvar("x", (3,))), x), [0.0, 1.0, 3.0])
    a = np.array([-7, 7, -7, 7], "int32")
    b = np.array([2, -2, -2, 2], "int32")
    ia, ib = tvar("a", (4,), "int32"), tvar("b", (4,), "int32")
    assert run(op.trunc_divide(ia, ib), a, b).tolist() == [-3, -3, 3, 3]
    assert run(op.trunc_mod(ia, ib), a, b).tolist() == [-1, 1, -1, 1]
    fa, fb = a.astype("float32") + 0.5, b.astype("float32")
    out = run(op.trunc_divide(tvar("a", (4,)), tvar("b", (4,))), fa, fb)
    assert out.tolist() == [float(int(p / q)) for p, q in zip(fa, fb, strict=True)]


def test_cast_like(run, tvar):
    x = np.array([1.7, -2.2], "float32")
    out = run(op.cast_like(tvar("x", (2,)), tvar("y", (5, 1), "int8")), x, np.zeros((5, 1), "int8"))
    assert out.dtype == np.int8 and out.tolist() == [1, -2]


def test_slice_like(run, tvar, rel):
    data = np.arange(24, dtype="float32").reshape(2, 3, 4)
    like = np.zeros((1, 2), "float32")
    assert run(op.slice_like(tvar("d", (2, 3, 4)), tvar("l", (1, 2))), data, like).tolist() == (
        data[:1, :2, :].tolist()
    )
    like3 = np.zeros((2, 2, 3), "float32")
    out = run(op.slice_like(tvar("d", (2, 3, 4)), tvar("l", (2, 2, 3)), axes=[-1]), data, like3)
    assert out.tolist() == data[:, :, :3].tolist()
    with pytest.raises(TypeRelError, match="longer"):
        rel(op.slice_like(tvar("d", (2, 3, 4)), tvar("l", (3, 1))))
    with pytest.raises(TypeRelError, match="out of range"):
        rel(op.slice_like(tvar("d", (2, 3, 4)), tvar("l", (2, 3)), axes=[2]))


def test_l2_normalize(run, tvar, rng):
    x = rng.standard_normal((2, 3, 4)).astype("float32")
    out = run(op.nn.l2_normalize(tvar("x", x.shape), 1e-10, axis=[1]), x)
    norm = np.sqrt((x.astype(np.float64) ** 2).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(out, x / norm, rtol=1e-6)
    tiny = np.zeros((2, 2), "float32")
    assert run(op.nn.l2_normalize(tvar("t", (2, 2)), 1.0), tiny).tolist() == [[0, 0], [0, 0]]


def test_checkpoint_is_identity(run, tvar):
    x = np.arange(3, dtype="float32")
    assert run(op.annotation.checkpoint(tvar("x", (3,))), x).tolist() == [0, 1, 2]


def test_printed_calls_parse_back():
    x = relay.var("x", shape=(2, 5))
    y = relay.var("y", shape=(1, 3), dtype="int8")
    body = relay.Tuple([
        relay.log10(x), relay.trunc_mod(x, x), relay.cast_like(x, y),
        relay.slice_like(x, y, axes=[1]), relay.sort(x, is_ascend=False), relay.argsort(x),
        relay.searchsorted(x, x, right=True), relay.nn.l2_normalize(x, 1e-6, axis=[1]),
        relay.annotation.checkpoint(x), relay.topk(x, k=0)[1],
    ])  # fmt: skip
    mod = relaykit.IRModule.from_expr(relay.Function([x, y], body))
    mod = relay.transform.InferType()(mod)
    again = relay.fromtext(mod.astext())
    assert relaykit.ir.structural_equal(again["main"], mod["main"])


def test_cross_entropy(run, tvar, rng, rel):
    p = rng.uniform(0.1, 1.0, (3, 4)).astype("float64")
    t = rng.uniform(0.0, 1.0, (3, 4)).astype("float64")
    out = run(op.nn.cross_entropy(tvar("p", (3, 4), "float64"), tvar("t", (3, 4), "float64")), p, t)
    assert np.isclose(out, -sum(np.log(p[i, j]) * t[i, j] for i in range(3) for j in range(4)) / 3)
    logits = op.nn.cross_entropy_with_logits(tvar("p", (3, 4)), tvar("t", (3, 4)))
    pl, tl = p.astype("float32"), t.astype("float32")
    assert np.isclose(run(logits, pl, tl), -(pl * tl).sum() / 3, rtol=1e-5)
    with pytest.raises(TypeRelError, match="match"):
        rel(op.nn.cross_entropy(tvar("p", (3, 4)), tvar("t", (3, 5))))


def test_dyn_topk_takes_a_one_element_k():
    x = relay.var("x", shape=(3, 4))
    k = relay.var("k", shape=(1,), dtype="float32")
    mod = relaykit.IRModule.from_expr(relay.Function([x, k], relay.topk(x, k, axis=0)[0]))
    data = np.arange(12, dtype="float32").reshape(3, 4)
    out = relay.create_executor("vm", mod=mod).evaluate()(data, np.array([2], "float32"))
    assert out.numpy().tolist() == data[::-1][:2].tolist()
