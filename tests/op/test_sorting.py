"""sort, argsort, searchsorted and topk (k < 1 keeps every element), against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import op
from relaykit.op import TypeRelError


def test_sort_argsort_both_directions(run, tvar, rng):
    x = rng.integers(0, 4, size=(3, 6)).astype("float32")  # many ties
    for axis in (0, 1, -1):
        asc = run(op.argsort(tvar("x", x.shape), axis=axis), x)
        assert asc.dtype == np.int32
        np.testing.assert_array_equal(asc, np.argsort(x, axis=axis, kind="stable"))
        desc = run(op.argsort(tvar("x", x.shape), axis=axis, is_ascend=False, dtype="int64"), x)
        np.testing.assert_array_equal(desc, np.argsort(-x, axis=axis, kind="stable"))
        vals = run(op.sort(tvar("x", x.shape), axis=axis, is_ascend=False), x)
        np.testing.assert_array_equal(vals, -np.sort(-x, axis=axis))
        asc_vals = run(op.sort(tvar("x", x.shape), axis=axis), x)
        np.testing.assert_array_equal(asc_vals, np.sort(x, axis))


def test_sort_unsigned_descending(run, tvar):
    x = np.array([3, 0, 255, 7], "uint8")
    out = run(op.sort(tvar("x", (4,), "uint8"), is_ascend=False), x)
    assert out.tolist() == [255, 7, 3, 0]


def test_sort_bad_axis(rel, tvar):
    with pytest.raises(TypeRelError, match="axis"):
        rel(op.argsort(tvar("x", (2, 3)), axis=2))


def test_searchsorted_1d_and_batched(run, tvar, rng):
    seq = np.sort(rng.standard_normal(8)).astype("float32")
    vals = np.concatenate([seq[:3], rng.standard_normal(5).astype("float32")]).reshape(2, 4)
    for right in (False, True):
        side = "right" if right else "left"
        out = run(op.searchsorted(tvar("s", (8,)), tvar("v", (2, 4)), right=right), seq, vals)
        assert out.tolist() == [
            [int(np.sum(seq < v if not right else seq <= v)) for v in row] for row in vals
        ]
        assert out.tolist() == np.searchsorted(seq, vals, side=side).tolist()
    seq2 = np.sort(rng.standard_normal((2, 5)), axis=1).astype("float32")
    out = run(op.searchsorted(tvar("s", (2, 5)), tvar("v", (2, 4)), dtype="int64"), seq2, vals)
    assert out.dtype == np.int64
    for b in range(2):
        assert out[b].tolist() == [int(np.sum(seq2[b] < v)) for v in vals[b]]


def test_searchsorted_shape_checks(rel, tvar):
    with pytest.raises(TypeRelError, match="rank"):
        rel(op.searchsorted(tvar("s", (2, 5)), tvar("v", (4,))))
    with pytest.raises(TypeRelError, match="differ"):
        rel(op.searchsorted(tvar("s", (2, 5)), tvar("v", (3, 4))))


def test_topk_k_below_one_returns_all_sorted(run, tvar, rng):
    x = rng.standard_normal((3, 5)).astype("float32")
    for k in (0, -1):
        values, indices = run(op.topk(tvar("x", (3, 5)), k=k).astuple(), x)
        assert values.shape == (3, 5)
        np.testing.assert_array_equal(indices, np.argsort(-x, axis=1, kind="stable"))
        np.testing.assert_array_equal(values, -np.sort(-x, axis=1))
    with pytest.raises(TypeRelError, match="out of range"):
        rel_call = op.topk(tvar("x", (3, 5)), k=6).astuple()
        rel_call.op.get_attr("FTypeRelation")([tvar("x", (3, 5)).type_annotation], rel_call.attrs)
