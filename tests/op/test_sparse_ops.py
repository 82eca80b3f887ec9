"""sparse_to_dense, sparse_reshape, segment_sum, unravel_index, unique, adv_index and
fixed_point_multiply, each against an independent NumPy computation (loops, np.unique,
exact rational arithmetic)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from relaykit import relay
from relaykit.ir import IRModule

RNG = np.random.default_rng(0)


def _run(outs, params, *arrays, kind="vm"):
    body = outs.astuple() if hasattr(outs, "astuple") else outs
    mod = IRModule.from_expr(relay.Function(params, body))
    res = relay.create_executor(kind, mod=mod).evaluate()(*arrays)
    return res.numpy() if hasattr(res, "numpy") else [r.numpy() for r in res]


def test_sparse_to_dense_matches_a_loop():
    idx = np.array([[0, 1], [2, 3], [1, 0]], "int64")
    vals = np.array([1.5, -2.0, 4.0], "float32")
    a, b = relay.var("a", shape=(3, 2), dtype="int64"), relay.var("b", shape=(3,))
    out = _run(relay.sparse_to_dense(a, [3, 4], b, relay.const(7.0)), [a, b], idx, vals)
    want = np.full((3, 4), 7.0, "float32")
    for (i, j), v in zip(idx, vals, strict=True):
        want[i, j] = v
    np.testing.assert_array_equal(out, want)
    # a scalar index into a 1-D output, default 0
    s, v = relay.var("s", shape=(), dtype="int32"), relay.var("v", shape=(), dtype="int32")
    out = _run(relay.sparse_to_dense(s, [4], v), [s, v], np.array(2, "int32"), np.array(9, "int32"))
    assert out.tolist() == [0, 0, 9, 0]


@pytest.mark.parametrize("dynamic", [False, True])
def test_sparse_reshape_keeps_every_flat_offset(dynamic):
    prev, new = (2, 3, 4), (6, -1)
    dense = np.zeros(prev, "float32")
    coords = np.array([[0, 0, 1], [1, 2, 3], [0, 2, 0], [1, 0, 2]], "int64")
    dense[tuple(coords.T)] = np.arange(1, 5)
    shape_i = (relay.Any(), relay.Any()) if dynamic else coords.shape
    i = relay.var("i", shape=shape_i, dtype="int64")
    p = relay.var("p", shape=(relay.Any(),) if dynamic else (3,), dtype="int64")
    n = relay.var("n", shape=(relay.Any(),) if dynamic else (2,), dtype="int64")
    new_idx, new_shape = _run(
        relay.op.sparse_reshape(i, p, n), [i, p, n], coords, np.array(prev), np.array(new)
    )
    assert new_shape.tolist() == [6, 4]
    reshaped = dense.reshape(6, 4)
    for old, moved in zip(coords, new_idx, strict=True):
        assert reshaped[tuple(moved)] == dense[tuple(old)]


@pytest.mark.parametrize("num_segments", [None, 5])
def test_segment_sum_matches_a_loop(num_segments):
    data = RNG.standard_normal((6, 3)).astype("float32")
    ids = np.array([0, 2, 2, 1, 0, 3], "int32")
    d = relay.var("d", shape=(relay.Any(), 3))
    s = relay.var("s", shape=(relay.Any(),), dtype="int32")
    out = _run(relay.op.segment_sum(d, s, num_segments), [d, s], data, ids)
    rows = num_segments or 4
    want = np.zeros((rows, 3), "float32")
    for row, seg in zip(data, ids, strict=True):
        want[seg] += row
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_unravel_index_is_numpys():
    x = relay.var("x", shape=(3,), dtype="int64")
    y = relay.var("y", shape=(4,), dtype="int64")
    flat, dims = np.array([100, 13, 5]), np.array([5, 5, 5, 2])
    out = _run(relay.unravel_index(x, y), [x, y], flat, dims, kind="debug")
    np.testing.assert_array_equal(out, np.stack(np.unravel_index(flat, tuple(dims))))


@pytest.mark.parametrize("is_sorted", [True, False])
def test_unique_against_first_occurrences(is_sorted):
    data = np.array([4, 1, 4, 3, 1, 1, 7], "int32")
    x = relay.var("x", shape=(7,), dtype="int32")
    uniq, first, inverse, num, counts = _run(relay.unique(x, is_sorted, True), [x], data)
    seen: list[int] = []
    for v in data.tolist():
        if v not in seen:
            seen.append(v)
    order = sorted(seen) if is_sorted else seen
    k = int(num[0])
    assert k == len(order) and uniq[:k].tolist() == order
    assert first[:k].tolist() == [data.tolist().index(v) for v in order]
    assert counts[:k].tolist() == [data.tolist().count(v) for v in order]
    assert [order[j] for j in inverse] == data.tolist()


def test_adv_index_is_numpy_advanced_indexing():
    data = RNG.standard_normal((5, 4, 3)).astype("float32")
    i0 = np.array([[0, 4], [2, 1]], "int64")
    i1 = np.array([3, 0], "int64")
    d = relay.var("d", shape=data.shape)
    a = relay.var("a", shape=i0.shape, dtype="int64")
    b = relay.var("b", shape=i1.shape, dtype="int64")
    out = _run(relay.op.adv_index([d, a, b]), [d, a, b], data, i0, i1, kind="debug")
    assert out.shape == (2, 2, 3)
    for r in range(2):
        for c in range(2):
            np.testing.assert_array_equal(out[r, c], data[i0[r, c], i1[c]])


def test_fixed_point_multiply_rounds_the_exact_product():
    data = np.array([-1000, -23, -1, 0, 1, 23, 77, 1 << 20], "int32")
    m, shift = 1518500250, -2  # about 0.7071 * 2**-2
    x = relay.var("x", shape=data.shape, dtype="int32")
    out = _run(relay.fixed_point_multiply(x, m, shift), [x], data, kind="debug")
    scale = Fraction(m, 1 << 31) * Fraction(2) ** shift
    want = [int((Fraction(int(v)) * scale + Fraction(1, 2)).__floor__()) for v in data]
    assert out.tolist() == want


def _fill_rows_loop(idx, vals, num_rows, default):
    """TensorFlow's SparseFillEmptyRows, row by row."""
    out_idx, out_vals = [], []
    for r in range(num_rows):
        hits = [k for k in range(len(idx)) if idx[k][0] == r]
        if not hits:
            out_idx.append([r] + [0] * (idx.shape[1] - 1))
            out_vals.append(default)
        for k in hits:
            out_idx.append(list(idx[k]))
            out_vals.append(vals[k])
    empty = [not any(idx[k][0] == r for k in range(len(idx))) for r in range(num_rows)]
    return np.array(out_idx).reshape(-1, idx.shape[1]), np.array(out_vals), np.array(empty)


@pytest.mark.parametrize("kind", ["vm", "debug"])
@pytest.mark.parametrize(
    "idx, rows",
    [
        (np.array([[0, 1], [0, 3], [2, 0], [3, 1]]), 5),
        (np.array([[1, 1, 1], [1, 3, 1], [4, 0, 5]]), 7),
        (np.zeros((0, 2), "int64"), 3),
    ],
)
def test_sparse_fill_empty_rows_matches_a_loop(idx, rows, kind):
    idx = idx.astype("int32")
    vals = np.arange(1, len(idx) + 1).astype("float32")
    dense = np.array([rows] + [9] * (idx.shape[1] - 1), "int32")
    default = np.array([-5.0], "float32")
    i = relay.var("i", shape=[relay.Any(), relay.Any()], dtype="int32")
    v = relay.var("v", shape=[relay.Any()], dtype="float32")
    s = relay.var("s", shape=[relay.Any()], dtype="int32")
    d = relay.var("d", shape=(1,), dtype="float32")
    outs = relay.sparse_fill_empty_rows(i, v, s, d)
    got = _run(outs, [i, v, s, d], idx, vals, dense, default, kind=kind)
    want = _fill_rows_loop(idx, vals, rows, -5.0)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w.astype(g.dtype))
    assert [g.dtype for g in got] == [np.int32, np.float32, np.bool_]


def test_sparse_fill_empty_rows_types_and_errors():
    from relaykit.errors import RelayTypeError
    from relaykit.testing import run_infer_type

    i = relay.var("i", shape=(4, 2), dtype="int64")
    v = relay.var("v", shape=(4,), dtype="int64")
    s = relay.var("s", shape=(2,), dtype="int64")
    a, b, c = run_infer_type(
        relay.sparse_fill_empty_rows(i, v, s, relay.var("d", shape=(1,), dtype="int64"))
    )
    assert (str(a.checked_type), str(b.checked_type), str(c.checked_type)) == (
        "Tensor[(?, 2), int64]",
        "Tensor[(?), int64]",
        "Tensor[(?), bool]",
    )
    with pytest.raises(RelayTypeError, match="dtype of sparse_values"):
        run_infer_type(relay.sparse_fill_empty_rows(i, v, s, relay.var("d", shape=(1,))).astuple())


def test_sparse_to_dense_with_a_run_time_shape():
    idx = np.array([[0, 0], [1, 2]], "int64")
    a = relay.var("a", shape=(2, 2), dtype="int64")
    b = relay.var("b", shape=(2,), dtype="int64")
    shape = relay.var("shape", shape=(2,), dtype="int64")
    call = relay.sparse_to_dense(a, shape, b, relay.const(4, "int64"))
    assert call.op.name == "dyn.sparse_to_dense"
    out = _run(call, [a, b, shape], idx, np.array([1, 2]), np.array([3, 4]), kind="debug")
    want = np.full((3, 4), 4)
    want[0, 0], want[1, 2] = 1, 2
    np.testing.assert_array_equal(out, want)
