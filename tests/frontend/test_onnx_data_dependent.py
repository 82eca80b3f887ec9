"""NonMaxSuppression and Unique: output shapes that depend on input values, evaluated at
import when their inputs are constants and at run time (dynamic operators on the Relay VM)
otherwise. Checked against onnx's reference evaluator on random inputs of their own."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from relaykit.frontend import from_onnx
from relaykit.frontend.onnx.backend import RelayKitBackend

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def check(model, *inputs):
    names = [i.name for i in model.graph.input]
    want = ReferenceEvaluator(model).run(None, dict(zip(names, inputs, strict=True)))
    got = RelayKitBackend.run_model(model, list(inputs))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
        np.testing.assert_array_equal(g, w)
    return got


def random_boxes(rng, batches, n, center):
    if center:
        xy = rng.uniform(0, 10, (batches, n, 2))
        wh = rng.uniform(0.5, 4, (batches, n, 2))
        return np.concatenate([xy, wh], -1).astype("float32")
    a = rng.uniform(0, 10, (batches, n, 2))
    b = a + rng.uniform(-4, 4, (batches, n, 2))  # opposite corners in either order
    return np.concatenate([a, b], -1)[..., [0, 1, 2, 3]].astype("float32")


def nms_model(make_model, batches, classes, n, with_score, **attrs):
    names = ["boxes", "scores", "max_out", "iou", "score"][: 5 if with_score else 4]
    node = helper.make_node("NonMaxSuppression", names, ["selected"], **attrs)
    inputs = [
        ("boxes", F, [batches, n, 4]),
        ("scores", F, [batches, classes, n]),
        ("max_out", I64, [1]),
        ("iou", F, [1]),
        ("score", F, [1]),
    ][: len(names)]
    return make_model([node], inputs, [("selected", I64, None)], opset=11)


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("with_score", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_non_max_suppression_matches_the_reference(make_model, center, with_score, seed):
    rng = np.random.default_rng(seed)
    model = nms_model(make_model, 2, 3, 12, with_score, center_point_box=center)
    scores = rng.uniform(0, 1, (2, 3, 12)).astype("float32")
    scores[0, 0, 3] = scores[0, 0, 5]  # a tie: the lower box index goes first
    inputs = [
        random_boxes(rng, 2, 12, center),
        scores,
        np.array([4], "int64"),
        np.array([0.3], "float32"),
        np.array([0.4], "float32"),
    ]
    got = check(model, *inputs[: 5 if with_score else 4])
    assert got[0].shape[0] > 0


def test_non_max_suppression_without_a_limit_selects_nothing(make_model):
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["selected"])
    model = make_model(
        [node], [("boxes", F, [1, 3, 4]), ("scores", F, [1, 1, 3])], [("selected", I64, None)]
    )
    boxes = np.array([[[0, 0, 1, 1], [2, 2, 3, 3], [4, 4, 5, 5]]], "float32")
    scores = np.array([[[0.1, 0.2, 0.3]]], "float32")
    (got,) = RelayKitBackend.run_model(model, [boxes, scores])
    assert got.shape == (0, 3) and got.dtype == np.int64


def test_non_max_suppression_by_hand():
    from relaykit.frontend.onnx.converters.dynamic import non_max_suppression

    # box 1 overlaps box 0 with IoU 0.9/1.1; box 2 is far away; box 3 has the top score
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6], [0, 10, 1, 11]]], "float32")
    scores = np.array([[[0.9, 0.8, 0.7, 0.95]]], "float32")
    got = non_max_suppression(boxes, scores, 10, 0.5, None, 0)
    assert got.tolist() == [[0, 0, 3], [0, 0, 0], [0, 0, 2]]
    # a threshold above that IoU keeps box 1; a score threshold drops box 2
    got = non_max_suppression(boxes, scores, 10, 0.9, 0.75, 0)
    assert got.tolist() == [[0, 0, 3], [0, 0, 0], [0, 0, 1]]
    assert non_max_suppression(boxes, scores, 2, 0.5, None, 0).tolist() == [[0, 0, 3], [0, 0, 0]]


def test_non_max_suppression_of_run_time_boxes_is_a_dynamic_operator(make_model):
    # imported once: the selection happens at run time, its row count is ?
    model = nms_model(make_model, 1, 1, 4, False)
    mod, _ = from_onnx(model)
    body = mod["main"].body
    assert body.op.name == "dyn.non_max_suppression"
    assert str(body.checked_type) == "Tensor[(?, 3), int64]"


def unique_model(make_model, shape, dtype=F, **attrs):
    node = helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], **attrs)
    outs = [("y", dtype, None)] + [(n, I64, None) for n in ("indices", "inverse", "counts")]
    return make_model([node], [("x", dtype, shape)], outs, opset=11)


@pytest.mark.parametrize(
    "attrs, shape",
    [
        ({}, [20]),
        ({"sorted": 0}, [20]),
        ({}, [4, 5]),
        ({"axis": 0}, [6, 3]),
        ({"axis": 0, "sorted": 0}, [6, 3]),
        ({"axis": -1}, [2, 3, 6]),
    ],
)
def test_unique_matches_the_reference(make_model, attrs, shape):
    x = np.random.default_rng(len(shape)).integers(0, 3, shape).astype("float32")
    check(unique_model(make_model, shape, **attrs), x)


def unique_by_loop(x, axis, sorted_):
    """ONNX Unique written from the spec with a Python loop over the slices."""
    slices = list(x.reshape(-1)) if axis is None else list(np.moveaxis(x, axis, 0))
    keys = [np.asarray(s).tobytes() for s in slices]
    order: list[int] = []  # first occurrences, in input order
    for i, k in enumerate(keys):
        if all(keys[j] != k for j in order):
            order.append(i)
    if sorted_:
        order.sort(key=lambda i: tuple(np.asarray(slices[i]).reshape(-1)))
    inverse = [next(r for r, j in enumerate(order) if keys[j] == k) for k in keys]
    counts = [keys.count(keys[j]) for j in order]
    y = np.stack([slices[j] for j in order])
    y = y if axis is None else np.moveaxis(y, 0, axis)
    return y, order, inverse, counts


@pytest.mark.parametrize(
    "axis, shape", [(None, [4, 5]), (1, [2, 7]), (1, [2, 5, 2]), (-1, [3, 2, 4]), (0, [9])]
)
@pytest.mark.parametrize("sorted_", [0, 1])
def test_unique_matches_a_loop_from_the_spec(make_model, axis, shape, sorted_):
    # (onnx's reference evaluator takes unsorted slices along axis 0 whatever the axis)
    x = np.random.default_rng(len(shape)).integers(0, 2, shape).astype("float32")
    attrs = {"sorted": sorted_} if axis is None else {"sorted": sorted_, "axis": axis}
    got = RelayKitBackend.run_model(unique_model(make_model, shape, **attrs), [x])
    want = unique_by_loop(x, axis, sorted_)
    np.testing.assert_array_equal(got[0], want[0])
    for g, w in zip(got[1:], want[1:], strict=True):
        assert g.dtype == np.int64
        assert g.tolist() == list(w)


def test_unique_by_hand():
    from relaykit.frontend.onnx.converters.dynamic import unique

    x = np.array([[1, 0], [2, 2], [1, 0]], "int64")
    y, first, inverse, counts = unique(x, 0, sorted_=True)
    assert y.tolist() == [[1, 0], [2, 2]]
    assert first.tolist() == [0, 1] and inverse.tolist() == [0, 1, 0]
    assert counts.tolist() == [2, 1]
    y, first, inverse, counts = unique(np.array([3, 1, 3, 0, 1]), None, sorted_=False)
    assert y.tolist() == [3, 1, 0] and first.tolist() == [0, 1, 3]
    assert inverse.tolist() == [0, 1, 0, 2, 1] and counts.tolist() == [2, 2, 1]
