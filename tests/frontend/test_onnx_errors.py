"""Errors: unsupported ops listed at once, dynamic shapes, malformed files and graphs."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from relaykit.errors import DynamicShapeError, FrontendError, UnsupportedOpError
from relaykit.frontend import from_onnx, load_model

F = TensorProto.FLOAT


def _relu_model(make_model):
    return make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="r")], [("x", F, [2])], [("y", F, [2])]
    )


def test_unsupported_ops_are_all_listed_with_counts_and_first_node(make_model):
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="ok"),
        helper.make_node("FooBar", ["a"], ["b"], name="foo_1"),
        helper.make_node("FooBar", ["b"], ["c"], name="foo_2"),
        helper.make_node("BazQux", ["c"], ["y"], name="baz_1"),
    ]
    model = make_model(nodes, [("x", F, [2])], [("y", F, [2])])
    with pytest.raises(UnsupportedOpError) as info:
        from_onnx(model)
    msg = str(info.value)
    assert "2 operator types" in msg
    assert "FooBar: 2 nodes (first: 'foo_1')" in msg
    assert "BazQux: 1 node (first: 'baz_1')" in msg
    assert info.value.ops == {"FooBar": (2, "foo_1"), "BazQux": (1, "baz_1")}


def test_dynamic_shape_names_the_node(make_model):
    # a scalar SplitToSequence split decides how many tensors the sequence holds: that
    # count must be known at import, even though the sizes could be run-time values
    model = make_model(
        [helper.make_node("SplitToSequence", ["x", "s"], ["y"], name="my_split")],
        [("x", F, [6, 3]), ("s", TensorProto.INT64, [])],
        [("y", F, None)],
    )
    model.graph.output[0].type.CopyFrom(
        helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
    )
    with pytest.raises(DynamicShapeError, match=r"node 'my_split' \(SplitToSequence\): its split"):
        from_onnx(model)


def test_symbolic_input_dimension_is_dynamic(make_model):
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", F, ["N"])], [("y", F, ["N"])]
    )
    mod, _ = from_onnx(model)
    assert str(mod["main"].params[0].checked_type) == "Tensor[(?), float32]"
    mod, _ = from_onnx(model, shape={"x": (5,)})  # pinned
    assert str(mod["main"].params[0].checked_type) == "Tensor[(5), float32]"
    # for callers that need static shapes: the old error, naming the input
    with pytest.raises(DynamicShapeError, match=r"graph input 'x' has a dynamic dimension 0"):
        from_onnx(model, dynamic=False)


def test_truncated_file(tmp_path, make_model):
    path = tmp_path / "m.onnx"
    data = _relu_model(make_model).SerializeToString()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(FrontendError, match=r"m\.onnx.*(truncated|not an ONNX)"):
        load_model(path)


def test_wrong_protobuf(tmp_path):
    path = tmp_path / "tensor.onnx"
    path.write_bytes(numpy_helper.from_array(np.ones(3, "float32"), "t").SerializeToString())
    with pytest.raises(FrontendError, match="not an ONNX model|cannot read"):
        load_model(path)


def test_missing_file_and_wrong_suffix(tmp_path):
    with pytest.raises(FrontendError, match="does not exist"):
        load_model(tmp_path / "nope.onnx")
    with pytest.raises(FrontendError, match=r"reads \.onnx files"):
        load_model(tmp_path / "model.txt")


def test_missing_tensor_names_node_and_tensor(make_model):
    model = make_model(
        [helper.make_node("Add", ["x", "ghost"], ["y"], name="adder")],
        [("x", F, [2])],
        [("y", F, [2])],
    )
    with pytest.raises(FrontendError, match=r"node 'adder' \(Add\): input 1 reads tensor 'ghost'"):
        from_onnx(model)


def test_wrong_attribute_type_names_node_and_attribute(make_model):
    node = helper.make_node("Softmax", ["x"], ["y"], name="sm")
    node.attribute.append(helper.make_attribute("axis", 1.5))
    model = make_model([node], [("x", F, [2, 2])], [("y", F, [2, 2])])
    with pytest.raises(
        FrontendError,
        match=r"node 'sm' \(Softmax\): attribute 'axis' must be of type INT, got FLOAT",
    ):
        from_onnx(model)


def test_type_error_inside_a_node_names_it(make_model):
    model = make_model(
        [helper.make_node("Add", ["a", "b"], ["y"], name="bad_add")],
        [("a", F, [2, 3]), ("b", F, [4])],
        [("y", F, None)],
    )
    with pytest.raises(FrontendError, match=r"node 'bad_add' \(Add\).*cannot be broadcast"):
        from_onnx(model)


def test_graph_output_not_produced(make_model):
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2])], [("z", F, [2])])
    with pytest.raises(FrontendError, match="graph output 'z' is not produced"):
        from_onnx(model)


def test_not_a_model_object():
    with pytest.raises(FrontendError, match="takes an onnx.ModelProto or a file path"):
        from_onnx(42)
