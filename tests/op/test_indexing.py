"""gather, gather_nd, scatter_elements, scatter_nd, cumsum/cumprod and topk, each
against an element-by-element Python loop."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from relaykit import op
from relaykit.op import TypeRelError

RNG = np.random.default_rng(0)


def test_gather_elements_loop(run, rel, tvar):
    data = RNG.standard_normal((3, 4)).astype("float32")
    idx = np.array([[0, 3], [-1, 1], [2, 2]], "int64")
    out = run(op.gather(tvar("d", (3, 4)), 1, tvar("i", (3, 2), "int64")), data, idx)
    for i, j in itertools.product(range(3), range(2)):
        assert out[i, j] == data[i, idx[i, j] % 4]
    with pytest.raises(TypeRelError, match="rank"):
        rel(op.gather(tvar("d", (3, 4)), 1, tvar("i", (3,), "int64")))


def test_gather_nd_loop(run, tvar):
    """Index tuples run along the first axis of indices (TVM's layout)."""
    data = np.arange(24, dtype="float32").reshape(2, 3, 4)
    idx = np.array([[0, 1], [1, -1]], "int64").T  # tuples (0, 1) and (1, -1)
    out = run(op.gather_nd(tvar("d", (2, 3, 4)), tvar("i", (2, 2), "int64")), data, idx)
    assert out.shape == (2, 4)
    assert out[0].tolist() == data[0, 1].tolist() and out[1].tolist() == data[1, 2].tolist()
    bidx = np.array([[1, 2]], "int64")  # batch_dims=1: row b takes data[b, bidx[0, b]]
    out_b = run(op.gather_nd(tvar("d", (2, 3, 4)), tvar("i", (1, 2), "int64"), 1), data, bidx)
    assert out_b.tolist() == [data[0, 1].tolist(), data[1, 2].tolist()]
    grid = np.array([[[0, 1], [1, 0]], [[2, 0], [1, 1]]], "int64")  # (M=2, 2, 2)
    out_g = run(op.gather_nd(tvar("d", (2, 3, 4)), tvar("i", (2, 2, 2), "int64")), data, grid)
    for y0, y1 in itertools.product(range(2), range(2)):
        assert out_g[y0, y1].tolist() == data[grid[0, y0, y1], grid[1, y0, y1]].tolist()


@pytest.mark.parametrize("reduction", ["update", "add", "mul", "min", "max"])
def test_scatter_elements_loop(run, tvar, reduction):
    data = RNG.standard_normal((3, 3)).astype("float32")
    idx = np.array([[1, 0, 2], [0, 2, 1]], "int64")
    upd = RNG.standard_normal((2, 3)).astype("float32")
    call = op.scatter_elements(
        tvar("d", (3, 3)), tvar("i", (2, 3), "int64"), tvar("u", (2, 3)), 0, reduction
    )
    out = run(call, data, idx, upd)
    want = data.copy()
    combine = {
        "update": lambda a, b: b,
        "add": lambda a, b: a + b,
        "mul": lambda a, b: a * b,
        "min": min,
        "max": max,
    }[reduction]
    for i, j in itertools.product(range(2), range(3)):
        want[idx[i, j], j] = combine(want[idx[i, j], j], upd[i, j])
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_scatter_nd_loop(run, tvar):
    data = np.zeros((4, 2), "float32")
    idx = np.array([[1, 3, 1]], "int64")  # (M=1, 3): rows 1, 3, 1
    upd = np.array([[1, 2], [3, 4], [5, 6]], "float32")
    call = op.scatter_nd(tvar("d", (4, 2)), tvar("i", (1, 3), "int64"), tvar("u", (3, 2)), "add")
    out = run(call, data, idx, upd)
    assert out.tolist() == [[0, 0], [6, 8], [0, 0], [3, 4]]


def test_cumsum_cumprod_exclusive(run, tvar):
    x = np.array([[1, 2, 3], [4, 5, 6]], "float32")
    v = tvar("x", (2, 3))
    assert run(op.cumsum(v, axis=1), x).tolist() == [[1, 3, 6], [4, 9, 15]]
    assert run(op.cumsum(v, axis=1, exclusive=True), x).tolist() == [[0, 1, 3], [0, 4, 9]]
    assert run(op.cumprod(v, axis=0), x).tolist() == [[1, 2, 3], [4, 10, 18]]
    assert run(op.cumsum(v), x).tolist() == [1, 3, 6, 10, 15, 21]


def test_topk_ties_and_order(run, rel, tvar):
    x = np.array([[3, 1, 3, 2]], "float32")
    values, _indices = op.topk(tvar("x", (1, 4)), k=3, dtype="int64")
    call = values.tuple_value
    vals, idx = run(call, x)
    assert vals.tolist() == [[3, 3, 2]] and idx.tolist() == [[0, 2, 3]]
    asc = op.topk(tvar("x", (1, 4)), k=2, is_ascend=True).tuple_value
    vals, idx = run(asc, x)
    assert vals.tolist() == [[1, 2]] and idx.tolist() == [[1, 3]]
    with pytest.raises(TypeRelError, match="out of range"):
        rel(op.topk(tvar("x", (1, 4)), k=5).tuple_value)
