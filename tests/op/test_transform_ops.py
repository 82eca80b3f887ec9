"""Shape operators: reshape ... reverse."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import op
from relaykit.ir import TensorType, Tuple, TupleGetItem, TupleType, TupleWrapper
from relaykit.op import TypeRelError
from relaykit.op.transform import infer_reshape


@pytest.mark.parametrize(
    "ishape, newshape, expected",
    [
        ((2, 3, 4), (6, 4), (6, 4)),
        ((2, 3, 4), (0, -1), (2, 12)),
        ((2, 3, 4), (-1,), (24,)),
        ((2, 3, 4), (4, 0, 2), (4, 3, 2)),
        ((2, 3, 4), (-2,), (2, 3, 4)),
        ((2, 3, 4), (2, -2), (2, 3, 4)),
        ((2, 3, 4), (-3, 4), (6, 4)),
        ((2, 3, 4), (0, -3), (2, 12)),
        ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
        ((6, 4), (-4, -1, 3, 0), (2, 3, 4)),
        ((2, 0, 3), (0, -1), (2, 0)),
    ],
)
def test_infer_reshape(ishape, newshape, expected):
    assert infer_reshape(ishape, newshape) == expected


@pytest.mark.parametrize(
    "ishape, newshape, message",
    [
        ((2, 3), (4, 2), r"cannot reshape \(2, 3\) \(6 elements\) to \(4, 2\)"),
        ((2, 3), (-1, -1), "more than one -1"),
        ((2, 3), (4, -1), "cannot reshape"),
        ((6,), (-4, 4, -1), "cannot split dimension 6 into 4 x -1"),
        ((2, 3), (0, 0, 0), "refers to input dimension 2"),
        ((2, 3), (-5, 6), "invalid value -5"),
    ],
)
def test_infer_reshape_errors(ishape, newshape, message):
    with pytest.raises(TypeRelError, match=message):
        infer_reshape(ishape, newshape)


def test_reshape_allowzero(rel, tvar):
    assert rel(op.reshape(tvar("x", (0, 3)), (0, 5), allowzero=True)) == TensorType((0, 5))


def test_reshape_kernel(run, tvar):
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    out = run(op.reshape(tvar("x", (2, 3, 4)), (-3, -1)), x)
    assert out.shape == (6, 4) and out.ravel().tolist() == list(range(24))
    assert op.reshape(tvar("x", (4,)), 4).attrs.newshape == (4,)
    assert op.reshape(tvar("x", (4,)), [2, 2]).attrs.type_key == "relay.attrs.ReshapeAttrs"


def test_transpose(run, rel, tvar):
    x = np.arange(6, dtype="int32").reshape(1, 2, 3)
    out = run(op.transpose(tvar("x", (1, 2, 3), "int32"), (2, 0, 1)), x)
    assert out.shape == (3, 1, 2)
    assert all(out[k, i, j] == x[i, j, k] for i in range(1) for j in range(2) for k in range(3))
    assert run(op.transpose(tvar("x", (1, 2, 3), "int32")), x).shape == (3, 2, 1)
    assert rel(op.transpose(tvar("x", (1, 2, 3)), (-1, 0, 1))) == TensorType((3, 1, 2))
    with pytest.raises(TypeRelError, match="must list all 3 axes"):
        rel(op.transpose(tvar("x", (1, 2, 3)), (0, 1)))
    with pytest.raises(TypeRelError, match="more than once"):
        rel(op.transpose(tvar("x", (1, 2, 3)), (0, 1, 1)))
    with pytest.raises(TypeRelError, match="axes 3 is out of range for a tensor of rank 3"):
        rel(op.transpose(tvar("x", (1, 2, 3)), (0, 1, 3)))


def test_squeeze_and_expand_dims(run, rel, tvar):
    v = tvar("x", (1, 3, 1))
    assert rel(op.squeeze(v)) == TensorType((3,))
    assert rel(op.squeeze(v, [-1])) == TensorType((1, 3))
    with pytest.raises(TypeRelError, match="cannot squeeze axis 1 .* size is not 1"):
        rel(op.squeeze(v, [1]))
    x = np.zeros((1, 3, 1), "float32")
    assert run(op.squeeze(v, [0]), x).shape == (3, 1)
    w = tvar("y", (2, 3))
    assert rel(op.expand_dims(w, 1)) == TensorType((2, 1, 3))
    assert rel(op.expand_dims(w, -1, 2)) == TensorType((2, 3, 1, 1))
    assert rel(op.expand_dims(w, 2)) == TensorType((2, 3, 1))
    assert run(op.expand_dims(w, 0, 2), np.ones((2, 3), "float32")).shape == (1, 1, 2, 3)
    with pytest.raises(TypeRelError, match="expand_dims axis 3 is out of range"):
        rel(op.expand_dims(w, 3))


def test_concatenate(run, rel, tvar):
    a, b = tvar("a", (2, 3)), tvar("b", (2, 5))
    call = op.concatenate([a, b], axis=1)
    assert isinstance(call.args[0], Tuple) and len(call.args) == 1
    assert rel(call) == TensorType((2, 8))
    xa = np.ones((2, 3), "float32")
    xb = np.zeros((2, 5), "float32")
    out = run(call, [xa, xb])
    assert out.tolist() == [[1, 1, 1, 0, 0, 0, 0, 0]] * 2
    assert rel(op.concatenate((a, a), axis=-2)) == TensorType((4, 3))
    with pytest.raises(TypeRelError, match="field 1 .* differs from field 0 .* in dimension 1"):
        rel(op.concatenate([a, b], axis=0))
    with pytest.raises(TypeRelError, match="same rank and dtype"):
        rel(op.concatenate([a, tvar("c", (2, 3), "int32")], axis=0))
    with pytest.raises(TypeRelError, match="must be a tuple of tensors"):
        rel(call, TensorType((2, 3)))


def test_stack(run, rel, tvar):
    a = tvar("a", (2, 3))
    call = op.stack([a, a, a], axis=1)
    assert rel(call) == TensorType((2, 3, 3))
    x = np.arange(6, dtype="float32").reshape(2, 3)
    assert run(call, [x, x + 1, x + 2])[1, 2, 0] == x[1, 0] + 2
    with pytest.raises(TypeRelError, match="one type"):
        rel(op.stack([a, tvar("b", (3, 2))], 0))


def test_split_sections_and_indices(run, rel, tvar):
    parts = op.split(tvar("x", (6, 2)), 3)
    assert isinstance(parts, TupleWrapper) and len(parts) == 3
    assert isinstance(parts[2], TupleGetItem) and parts[2].index == 2
    call = parts.astuple()
    assert rel(call) == TupleType([TensorType((2, 2))] * 3)
    x = np.arange(12, dtype="float32").reshape(6, 2)
    outs = run(call, x)
    assert [o.tolist() for o in outs] == [x[0:2].tolist(), x[2:4].tolist(), x[4:6].tolist()]
    by_index = op.split(tvar("x", (6, 2)), [1, 4], axis=0)
    assert len(by_index) == 3
    assert rel(by_index.astuple()) == TupleType(
        [TensorType((1, 2)), TensorType((3, 2)), TensorType((2, 2))]
    )
    with pytest.raises(TypeRelError, match="into 4 equal sections"):
        rel(op.split(tvar("x", (6, 2)), 4).astuple())
    with pytest.raises(TypeRelError, match="ascending"):
        rel(op.split(tvar("x", (6, 2)), [4, 1]).astuple())


@pytest.mark.parametrize(
    "begin, end, strides, axes, mode, py_slices",
    [
        ([1], [3], None, None, "end", (slice(1, 3),)),
        ([0, 1], [4, 5], [2, 2], None, "end", (slice(0, 4, 2), slice(1, 5, 2))),
        ([-1], [-5], [-1], None, "end", (slice(3, None, -1),)),
        ([3, 4], [0, 0], [-1, -2], None, "end", (slice(3, 0, -1), slice(4, 0, -2))),
        ([0, 2], [100, 2147483647], None, None, "end", (slice(0, 4), slice(2, 5))),
        ([2], [1], None, [1], "end", (slice(None), slice(2, 1))),
        ([1, 1], [2, -1], None, None, "size", (slice(1, 3), slice(1, 5))),
        ([1], [2], None, [1], "end", (slice(None), slice(1, 2))),
    ],
)
def test_strided_slice_matches_python_slicing(
    begin, end, strides, axes, mode, py_slices, run, tvar
):
    x = np.arange(20, dtype="float32").reshape(4, 5)
    call = op.strided_slice(tvar("x", (4, 5)), begin, end, strides, axes=axes, slice_mode=mode)
    out = run(call, x)
    want = [row[py_slices[1]] if len(py_slices) > 1 else row for row in x.tolist()[py_slices[0]]]
    assert out.tolist() == want


def test_strided_slice_errors(rel, tvar):
    with pytest.raises(TypeRelError, match="stride on axis 0 is 0"):
        rel(op.strided_slice(tvar("x", (4,)), [0], [2], [0]))
    with pytest.raises(TypeRelError, match="longer than the rank"):
        rel(op.strided_slice(tvar("x", (4,)), [0, 0], [2, 2]))
    with pytest.raises(TypeRelError, match="slice_mode must be"):
        rel(op.strided_slice(tvar("x", (4,)), [0], [2], slice_mode="bogus"))


def test_take_modes(run, rel, tvar):
    data = np.arange(10, dtype="float32").reshape(5, 2)
    idx = np.array([[0, 4], [7, -1]], dtype="int32")
    d, i = tvar("d", (5, 2)), tvar("i", (2, 2), "int32")
    clip = run(op.take(d, i, axis=0), data, idx)
    assert clip.shape == (2, 2, 2)
    assert clip[1, 0].tolist() == data[4].tolist() and clip[1, 1].tolist() == data[0].tolist()
    wrap = run(op.take(d, i, axis=0, mode="wrap"), data, idx)
    assert wrap[1, 0].tolist() == data[7 % 5].tolist() and wrap[1, 1].tolist() == data[4].tolist()
    flat = run(op.take(d, i), data, np.abs(idx))
    assert flat.tolist() == [[0.0, 4.0], [7.0, 1.0]]
    assert rel(op.take(d, tvar("j", (3,), "int64"), axis=1)) == TensorType((5, 3))
    with pytest.raises(TypeRelError, match="indices must be an integer tensor"):
        rel(op.take(d, tvar("j", (3,)), axis=1))
    with pytest.raises(TypeRelError, match="take mode must be"):
        rel(op.take(d, i, axis=1, mode="nearest"))


def test_broadcast_to_tile_repeat_reverse(run, rel, tvar):
    x = np.array([[1.0], [2.0]], dtype="float32")
    v = tvar("x", (2, 1))
    assert run(op.broadcast_to(v, (3, 2, 4)), x).shape == (3, 2, 4)
    with pytest.raises(TypeRelError, match="cannot broadcast"):
        rel(op.broadcast_to(v, (3, 4)))
    assert run(op.tile(v, (2, 3)), x).tolist() == [[1] * 3, [2] * 3, [1] * 3, [2] * 3]
    assert run(op.repeat(v, 2, 0), x).tolist() == [[1], [1], [2], [2]]
    assert run(op.reverse(v, 0), x).tolist() == [[2], [1]]
    with pytest.raises(TypeRelError, match="reverse axis 2 is out of range"):
        rel(op.reverse(v, 2))
