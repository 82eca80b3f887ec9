"""reshape_like, collapse_sum_*, broadcast_to_like, meshgrid, trilu,
reverse_sequence, sliding_window: types and values against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import RelayTypeError
from relaykit.ir import IRModule
from relaykit.transform import infer_type


def _run(fn, *args):
    out = relay.create_executor("debug", mod=IRModule.from_expr(fn)).evaluate()(*args)
    return out


def test_reshape_like_partial_ranges():
    x = relay.var("x", shape=(1, 2, 3, 4))
    y = relay.var("y", shape=(1, 6, 5))
    z = relay.reshape_like(x, y, lhs_begin=1, lhs_end=3, rhs_begin=1, rhs_end=2)
    assert str(infer_type(z)) == "Tensor[(1, 6, 4), float32]"
    data = np.arange(24, dtype="float32").reshape(1, 2, 3, 4)
    out = _run(relay.Function([x, y], z), data, np.zeros((1, 6, 5), "float32")).numpy()
    np.testing.assert_array_equal(out, data.reshape(1, 6, 4))
    bad = relay.reshape_like(x, relay.var("w", shape=(5,)))
    with pytest.raises(RelayTypeError, match="cannot reshape"):
        infer_type(bad)


def test_collapse_sum_and_broadcast_like():
    x = relay.var("x", shape=(2, 3, 4))
    like = relay.var("like", shape=(3, 1))
    f = relay.Function([x, like], relay.collapse_sum_like(x, like))
    data = np.random.RandomState(0).rand(2, 3, 4).astype("float32")
    out = _run(f, data, np.zeros((3, 1), "float32")).numpy()
    np.testing.assert_allclose(out, data.sum(axis=(0, 2)).reshape(3, 1), rtol=1e-6)
    to = relay.Function([x], relay.collapse_sum_to(x, (1, 4)))
    np.testing.assert_allclose(_run(to, data).numpy(), data.sum(axis=(0, 1))[None], rtol=1e-6)
    b = relay.Function([like, x], relay.broadcast_to_like(like, x))
    col = np.array([[1.0], [2.0], [3.0]], "float32")
    np.testing.assert_array_equal(_run(b, col, data).numpy(), np.broadcast_to(col, (2, 3, 4)))
    with pytest.raises(RelayTypeError, match="not a broadcast"):
        infer_type(relay.collapse_sum_like(like, x))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    a, b = relay.var("a", shape=(3,)), relay.var("b", shape=(5,))
    f = relay.Function([a, b], relay.meshgrid([a, b], indexing=indexing).astuple())
    da, db = np.arange(3, dtype="float32"), np.arange(5, dtype="float32")
    out = _run(f, da, db)
    for got, ref in zip(out, np.meshgrid(da, db, indexing=indexing), strict=True):
        np.testing.assert_array_equal(got.numpy(), ref)


@pytest.mark.parametrize(("upper", "k"), [(True, 0), (False, -2), (True, 1)])
def test_trilu(upper, k):
    x = relay.var("x", shape=(2, 5, 5))
    data = np.random.RandomState(1).normal(size=(2, 5, 5)).astype("float32")
    out = _run(relay.Function([x], relay.trilu(x, k, upper)), data).numpy()
    np.testing.assert_array_equal(out, np.triu(data, k) if upper else np.tril(data, k))


def test_reverse_sequence():
    x = relay.var("x", shape=(4, 4), dtype="int32")
    lengths = relay.const(np.array([1, 2, 3, 4], "int32"))
    data = np.arange(16, dtype="int32").reshape(4, 4)
    out = _run(relay.Function([x], relay.reverse_sequence(x, lengths, 0, 1)), data).numpy()
    ref = data.copy()
    for b, n in enumerate([1, 2, 3, 4]):
        ref[:n, b] = data[:n, b][::-1]
    np.testing.assert_array_equal(out, ref)
    with pytest.raises(RelayTypeError, match="entries"):
        infer_type(relay.reverse_sequence(x, relay.const(np.ones(5, "int32")), 0, 1))


def test_sliding_window():
    x = relay.var("x", shape=(2, 3, 32, 32))
    y = relay.sliding_window(x, 1, [3, 4, 5], [1, 2, 3])
    assert str(infer_type(y)) == "Tensor[(2, 1, 15, 10, 3, 4, 5), float32]"
    data = np.random.RandomState(2).rand(2, 3, 32, 32).astype("float32")
    out = _run(relay.Function([x], y), data).numpy()
    np.testing.assert_array_equal(out[1, 0, 7, 3], data[1, :, 14:18, 9:14])
    np.testing.assert_array_equal(out[0, 0, 14, 9], data[0, :, 28:32, 27:32])


def test_reverse_reshape_matches_special_values_from_the_right(run, tvar):
    data = np.arange(200, dtype="float32").reshape(10, 5, 4)
    # 0 copies the *last* input dim, -1 takes the rest: (10*5, 4), where reshape gives (40, 5)
    out = run(relay.reverse_reshape(tvar("x", (10, 5, 4)), (-1, 0)), data)
    np.testing.assert_array_equal(out, data.reshape(50, 4))
    out = run(relay.reverse_reshape(tvar("x", (10, 5, 4)), (0, -1, 2)), data)
    np.testing.assert_array_equal(out, data.reshape(10, 10, 2))
