"""Reductions and arg-reductions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from relaykit import op
from relaykit.ir import TensorType
from relaykit.op import TypeRelError


def _naive_reduce(x: np.ndarray, axes, keepdims, fn):
    """Reduce by enumerating index tuples (independent of NumPy's reductions)."""
    axes = set(range(x.ndim)) if axes is None else {a % x.ndim for a in axes}
    groups: dict = {}
    for idx in itertools.product(*[range(d) for d in x.shape]):
        key = (
            tuple(0 if (a in axes) else i for a, i in enumerate(idx))
            if keepdims
            else tuple(i for a, i in enumerate(idx) if a not in axes)
        )
        groups.setdefault(key, []).append(x[idx].item())
    shape = (
        tuple(1 if a in axes else d for a, d in enumerate(x.shape))
        if keepdims
        else tuple(d for a, d in enumerate(x.shape) if a not in axes)
    )
    out = np.empty(shape)
    for key, vals in groups.items():
        out[key] = fn(vals)
    return out


REDUCERS = {
    "sum": sum,
    "mean": lambda v: sum(v) / len(v),
    "max": max,
    "min": min,
    "prod": math.prod,
}


@pytest.mark.parametrize("name", sorted(REDUCERS))
@pytest.mark.parametrize("axis", [None, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, axis, keepdims, run, tvar, rng):
    x = rng.uniform(0.5, 1.5, size=(2, 3, 4)).astype("float32")
    call = getattr(op, name)(tvar("x", (2, 3, 4)), axis=axis, keepdims=keepdims)
    out = run(call, x)
    axes = None if axis is None else ((axis,) if isinstance(axis, int) else axis)
    want = _naive_reduce(x, axes, keepdims, REDUCERS[name])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_exclude(rel, tvar):
    v = tvar("x", (2, 3, 4))
    assert rel(op.sum(v, axis=1, exclude=True)) == TensorType((3,))
    assert rel(op.mean(v, axis=[0, 2], exclude=True, keepdims=True)) == TensorType((2, 1, 4))


def test_integer_sum_keeps_dtype(run, tvar):
    x = np.arange(6, dtype="int32").reshape(2, 3)
    out = run(op.sum(tvar("x", (2, 3), "int32"), axis=0), x)
    assert out.dtype == np.int32 and out.tolist() == [3, 5, 7]
    mean = run(op.mean(tvar("x", (2, 3), "int32"), axis=1), x)
    assert mean.dtype == np.int32 and mean.tolist() == [1, 4]


def test_all_any(run, rel, tvar):
    x = np.array([[True, False], [True, True]])
    v = tvar("x", (2, 2), "bool")
    assert run(op.all(v, axis=1), x).tolist() == [False, True]
    assert run(op.any(v, axis=0), x).tolist() == [True, True]
    with pytest.raises(TypeRelError, match="must be a bool tensor"):
        rel(op.all(tvar("y", (2,))))


def test_reduce_errors(rel, tvar):
    with pytest.raises(TypeRelError, match="reduction axis 3 is out of range"):
        rel(op.sum(tvar("x", (2, 3, 4)), axis=3))
    with pytest.raises(TypeRelError, match="more than once"):
        rel(op.sum(tvar("x", (2, 3, 4)), axis=(1, -2)))
    with pytest.raises(TypeRelError, match="empty axis"):
        rel(op.max(tvar("x", (2, 0)), axis=1))


def test_argmax_argmin(run, rel, tvar):
    x = np.array([[3, 9, 9], [7, 1, 7]], dtype="float32")
    v = tvar("x", (2, 3))
    am = run(op.argmax(v, axis=1), x)
    assert am.dtype == np.int32 and am.tolist() == [1, 0]
    assert run(op.argmax(v, axis=1, select_last_index=True), x).tolist() == [2, 2]
    assert run(op.argmin(v, axis=0, keepdims=True), x).tolist() == [[0, 1, 1]]
    assert run(op.argmax(v), x).tolist() == 1
    assert rel(op.argmax(v, axis=[1])) == TensorType((2,), "int32")
    assert rel(op.argmin(v, axis=1, exclude=True)) == TensorType((3,), "int32")
    assert op.argmax(v).attrs.type_key == "relay.attrs.ArgReduceAttrs"
