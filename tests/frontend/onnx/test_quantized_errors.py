"""Bad quantization parameters are errors naming the ONNX node and what is wrong, never
silently clipped: scale / zero-point shapes that do not match the axis, zero, negative
or non-finite scales, zero points outside the dtype's range or of another dtype, and
run-time parameters where the quantized operator needs constants."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relaykit.errors import FrontendError  # noqa: E402
from relaykit.frontend.onnx import from_onnx  # noqa: E402

MS = "com.microsoft"


def _import(node, inputs, inits, out_type=TensorProto.UINT8):
    graph = helper.make_graph(
        [node],
        "bad",
        [helper.make_tensor_value_info(k, t, s) for k, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(node.output[0], out_type, None)],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    return from_onnx(helper.make_model(graph, opset_imports=opsets))


X = {"x": (TensorProto.FLOAT, [2, 3, 4])}


@pytest.mark.parametrize(
    "scale", [0.0, -0.5, np.inf, np.nan], ids=["zero", "negative", "inf", "nan"]
)
def test_bad_scale_names_the_node(scale):
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q1")
    inits = {"s": np.array(scale, np.float32), "z": np.array(0, np.uint8)}
    with pytest.raises(FrontendError, match=r"node 'q1' \(QuantizeLinear\).*finite and positive"):
        _import(node, X, inits)


def test_bad_per_channel_scale_entry_is_located():
    node = helper.make_node("DequantizeLinear", ["w", "s", "z"], ["d"], name="dq", axis=0)
    inits = {"w": np.zeros((3, 2), np.int8), "s": np.array([0.1, 0.0, 0.2], np.float32)}
    inits["z"] = np.zeros(3, np.int8)
    with pytest.raises(FrontendError, match=r"node 'dq'.*finite and positive.*at index 1"):
        _import(node, {}, inits, TensorProto.FLOAT)


def test_scale_length_must_match_the_axis():
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="qa", axis=2)
    inits = {"s": np.full(3, 0.1, np.float32), "z": np.zeros(3, np.uint8)}
    with pytest.raises(FrontendError, match=r"node 'qa'.*3 entries.*4 channels"):
        _import(node, X, inits)


def test_zero_point_shape_must_match_the_scale():
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="qz", axis=1)
    inits = {"s": np.full(3, 0.1, np.float32), "z": np.zeros(4, np.uint8)}
    with pytest.raises(FrontendError, match=r"node 'qz'.*zero point has 4 entries.*3 channels"):
        _import(node, X, inits)


def test_qlinear_conv_weight_scale_per_output_channel():
    node = helper.make_node(
        "QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy"], ["y"], name="conv"
    )
    inits = {"sx": np.float32(0.1), "zx": np.uint8(0), "w": np.zeros((4, 3, 1, 1), np.int8)}
    inits |= {"sw": np.full(3, 0.1, np.float32), "zw": np.zeros(3, np.int8)}
    inits |= {"sy": np.float32(0.1), "zy": np.uint8(0)}
    with pytest.raises(FrontendError, match=r"node 'conv' \(QLinearConv\).*w scale has 3.*4"):
        _import(node, {"x": (TensorProto.UINT8, [1, 3, 4, 4])}, inits)


def test_zero_point_outside_the_dtype_range():
    node = helper.make_node(
        "QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["c"], name="add", domain=MS
    )
    inits = {"sa": np.float32(0.1), "za": np.uint8(3), "sb": np.float32(0.1), "zb": np.uint8(3)}
    inits |= {"sc": np.float32(0.1), "zc": np.array(300, np.int32)}
    a = (TensorProto.UINT8, [4])
    with pytest.raises(FrontendError, match=r"node 'add'.*300 is outside the range of uint8"):
        _import(node, {"a": a, "b": a}, inits)


def test_zero_point_of_another_dtype():
    node = helper.make_node(
        "QLinearSigmoid", ["x", "sx", "zx", "sy", "zy"], ["y"], name="sig", domain=MS
    )
    inits = {"sx": np.float32(0.1), "zx": np.int8(3), "sy": np.float32(0.1), "zy": np.uint8(3)}
    with pytest.raises(FrontendError, match=r"node 'sig'.*zero point is int8 but.*uint8"):
        _import(node, {"x": (TensorProto.UINT8, [4])}, inits)


def test_runtime_scale_where_a_constant_is_required():
    node = helper.make_node(
        "QLinearGlobalAveragePool", ["x", "sx", "zx", "sy", "zy"], ["y"], name="gap", domain=MS
    )
    inits = {"zx": np.uint8(3), "sy": np.float32(0.1), "zy": np.uint8(3)}
    inputs = {"x": (TensorProto.UINT8, [1, 2, 3, 3]), "sx": (TensorProto.FLOAT, [])}
    with pytest.raises(FrontendError, match=r"node 'gap'.*X scale is computed at run time"):
        _import(node, inputs, inits)


def test_two_dimensional_scale_without_block_size():
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q2")
    inits = {"s": np.full((2, 3), 0.1, np.float32), "z": np.zeros((2, 3), np.uint8)}
    with pytest.raises(FrontendError, match=r"node 'q2'.*block_size"):
        _import(node, X, inits)


def test_runtime_scales_of_standard_operators_still_import():
    """ONNX lets QuantizeLinear and QLinearMatMul take run-time parameters: they are
    computed exactly in float and integer arithmetic rather than refused."""
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="qr")
    mod, _ = _import(node, {**X, "s": (TensorProto.FLOAT, []), "z": (TensorProto.UINT8, [])}, {})
    assert "qnn." not in str(mod["main"])
