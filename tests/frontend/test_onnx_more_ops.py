"""Converters added for conformance (MaxPool's Indices, RoiAlign, TensorScatter,
SpaceToDepth's CRD mode, an empty boolean ReduceMax), checked against onnx's own
reference evaluator on inputs of their own."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from relaykit.frontend.onnx.backend import RelayKitBackend

F = TensorProto.FLOAT


def check(model, *inputs, rtol=1e-5):
    want = ReferenceEvaluator(model).run(
        None, dict(zip([i.name for i in model.graph.input], inputs, strict=True))
    )
    got = RelayKitBackend.run_model(model, list(inputs))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6)
    return got


def max_pool_model(make_model, **attrs):
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    return make_model(
        [node], [("x", F, [2, 3, 7, 6])], [("y", F, None), ("i", TensorProto.INT64, None)], opset=12
    )


def test_max_pool_indices_match_the_reference(make_model):
    model = max_pool_model(make_model, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6)).astype("float32")
    check(model, x)


def test_max_pool_indices_with_auto_pad_point_at_the_maxima(make_model):
    # (onnx's reference evaluator offsets these indices wrongly, so check them directly)
    model = max_pool_model(make_model, kernel_shape=[3, 2], auto_pad="SAME_UPPER")
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6)).astype("float32")
    y, i = RelayKitBackend.run_model(model, [x])
    want_y = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(x.reshape(-1)[i], y)
    # each index lies in its window: rows r..r+2 and columns c..c+1 of the padded input
    rows, cols = np.divmod(i % 42, 6)
    r0 = np.arange(7)[:, None] - 1
    c0 = np.arange(6)[None, :]
    assert ((rows >= r0) & (rows <= r0 + 2) & (cols >= c0) & (cols <= c0 + 1)).all()


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
def test_roi_align(make_model, mode, ctm):
    node = helper.make_node(
        "RoiAlign",
        ["x", "rois", "b"],
        ["y"],
        mode=mode,
        coordinate_transformation_mode=ctm,
        output_height=3,
        output_width=4,
        spatial_scale=0.5,
    )
    model = make_model(
        [node],
        [("x", F, [2, 2, 10, 12]), ("rois", F, [3, 4]), ("b", TensorProto.INT64, [3])],
        [("y", F, None)],
        opset=16,
    )
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 2, 10, 12)).astype("float32")
    rois = np.array([[0, 0, 9, 9], [4.5, 3.0, 20.0, 14.0], [1.0, 1.0, 2.0, 2.5]], "float32")
    check(model, x, rois, np.array([1, 0, 1], "int64"))


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter(make_model, mode):
    node = helper.make_node("TensorScatter", ["cache", "update", "at"], ["out"], mode=mode, axis=2)
    model = make_model(
        [node],
        [("cache", F, [2, 3, 5, 4]), ("update", F, [2, 3, 2, 4]), ("at", TensorProto.INT64, [2])],
        [("out", F, None)],
        opset=24,
    )
    rng = np.random.default_rng(2)
    cache = rng.standard_normal((2, 3, 5, 4)).astype("float32")
    update = rng.standard_normal((2, 3, 2, 4)).astype("float32")
    at = np.array([1, 4 if mode == "circular" else 3], "int64")
    (out,) = check(model, cache, update, at)
    assert not np.array_equal(out, cache)


def test_space_to_depth_crd_inverts_depth_to_space_crd(make_model):
    nodes = [
        helper.make_node("SpaceToDepth", ["x"], ["s"], blocksize=2, mode="CRD"),
        helper.make_node("DepthToSpace", ["s"], ["y"], blocksize=2, mode="CRD"),
    ]
    model = make_model([nodes[0]], [("x", F, [1, 2, 4, 6])], [("s", F, None)], opset=25)
    x = np.arange(48, dtype="float32").reshape(1, 2, 4, 6)
    (s,) = check(model, x)
    # channel c * 4 + (i * 2 + j) holds the pixels at offset (i, j) of channel c's blocks
    np.testing.assert_array_equal(s[0, 1 * 4 + 1 * 2 + 0], x[0, 1, 1::2, 0::2])
    round_trip = make_model(nodes, [("x", F, [1, 2, 4, 6])], [("y", F, None)], opset=25)
    (y,) = RelayKitBackend.run_model(round_trip, [x])
    np.testing.assert_array_equal(y, x)


def test_reduce_max_of_an_empty_bool_tensor_is_false(make_model):
    node = helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=1)
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    model = make_model(
        [node],
        [("x", TensorProto.BOOL, [2, 0, 3])],
        [("y", TensorProto.BOOL, None)],
        initializers=[axes],
        opset=20,
    )
    (y,) = RelayKitBackend.run_model(model, [np.zeros((2, 0, 3), bool)])
    assert y.dtype == bool and y.shape == (2, 1, 3) and not y.any()
