"""ONNX models on the narrow element types (bfloat16, float8, float4, int4, int2):
casts with saturation, float8_e8m0 rounding, quantisation, and arithmetic that is
computed wide and rounded back per node."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

ml_dtypes = pytest.importorskip("ml_dtypes")

from relaykit import relay  # noqa: E402
from relaykit.errors import FrontendError, MissingDependencyError  # noqa: E402
from relaykit.frontend.onnx import proto as _onnx_proto  # noqa: E402
from relaykit.frontend.onnx.backend import RelayKitBackend  # noqa: E402
from relaykit.ir.types import DTYPES  # noqa: E402


def run(model, *inputs):
    return RelayKitBackend.run_model(model, list(inputs))


def cast_model(make_model, src, dst, shape, **attrs):
    node = helper.make_node("Cast", ["x"], ["y"], to=dst, **attrs)
    return make_model([node], [("x", src, shape)], [("y", dst, shape)], opset=25)


def test_cast_to_float8_saturates_by_default(make_model):
    x = np.array([0.3, 1000.0, -np.inf, np.inf, np.nan, -500.0], "float32")
    model = cast_model(make_model, TensorProto.FLOAT, TensorProto.FLOAT8E4M3FN, [6])
    (y,) = run(model, x)
    assert y.dtype == ml_dtypes.float8_e4m3fn
    got = y.astype("float32")
    # e4m3fn: largest finite value 448, no infinities; 0.3 rounds to 0.3125
    assert got[:4].tolist() == [0.3125, 448.0, -448.0, 448.0]
    assert np.isnan(got[4]) and got[5] == -448.0


def test_cast_to_float8_without_saturation_overflows(make_model):
    x = np.array([1.0, 100000.0], "float32")
    model = cast_model(make_model, TensorProto.FLOAT, TensorProto.FLOAT8E5M2, [2], saturate=0)
    (y,) = run(model, x)
    assert y.astype("float32").tolist() == [1.0, np.inf]  # e5m2 has infinities


@pytest.mark.parametrize(
    "mode, want",
    [
        ("up", [4.0, 4.0, 2.0**-126]),
        ("down", [2.0, 2.0, 2.0**-127]),
        ("nearest", [4.0, 2.0, 2.0**-127]),
    ],
)
def test_cast_to_float8_e8m0_rounds_the_exponent(make_model, mode, want):
    # 3.0 = 1.5 * 2**1, 2.5 = 1.25 * 2**1, 2**-127 is a float32 subnormal (exponent bits 0)
    x = np.array([3.0, 2.5, 2.0**-127], "float32")
    model = cast_model(make_model, TensorProto.FLOAT, TensorProto.FLOAT8E8M0, [3], round_mode=mode)
    (y,) = run(model, x)
    assert y.dtype == ml_dtypes.float8_e8m0fnu
    assert y.astype("float64").tolist() == want
    # and as onnx's own conversion on many values, with and without saturation
    rng = np.random.default_rng(1)
    many = np.concatenate(
        [rng.standard_normal(200) * 10.0 ** rng.integers(-30, 30, 200), [np.nan, np.inf, 3.0e38]]
    ).astype("float32")
    for saturate in (0, 1):
        model = cast_model(
            make_model,
            TensorProto.FLOAT,
            TensorProto.FLOAT8E8M0,
            [203],
            round_mode=mode,
            saturate=saturate,
        )
        (y,) = run(model, many)
        ref = numpy_helper.to_float8e8m0(many, bool(saturate), mode)
        assert y.view("uint8").tolist() == ref.view("uint8").tolist()


def test_cast_int4_to_int8_and_back(make_model):
    x = np.array([-8, -1, 0, 7], ml_dtypes.int4)
    model = cast_model(make_model, TensorProto.INT4, TensorProto.INT8, [4])
    (y,) = run(model, x)
    assert y.dtype == np.int8 and y.tolist() == [-8, -1, 0, 7]


def test_quantize_to_int4_per_axis_rounds_and_clips(make_model):
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=0)
    model = make_model(
        [node],
        [
            ("x", TensorProto.FLOAT, [2, 3]),
            ("s", TensorProto.FLOAT, [2]),
            ("z", TensorProto.INT4, [2]),
        ],
        [("y", TensorProto.INT4, [2, 3])],
        opset=21,
    )
    x = np.array([[0.0, 5.0, 100.0], [-3.0, 3.0, -100.0]], "float32")
    s = np.array([2.0, 1.0], "float32")
    z = np.array([1, -1], ml_dtypes.int4)
    (y,) = run(model, x, s, z)
    assert y.dtype == ml_dtypes.int4
    # row 0: round(0/2)+1, round(2.5)+1 = 2+1 (half to even), 50+1 -> 7; row 1: -4, 2, -101 -> -8
    assert y.astype("int8").tolist() == [[1, 3, 7], [-4, 2, -8]]


def test_quantize_to_float8_saturates_without_integer_rounding(make_model):
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    zero = helper.make_tensor("z", TensorProto.FLOAT8E4M3FN, [1], [0])
    model = make_model(
        [node],
        [("x", TensorProto.FLOAT, [3]), ("s", TensorProto.FLOAT, [])],
        [("y", TensorProto.FLOAT8E4M3FN, [3])],
        initializers=[zero],
        opset=21,
    )
    (y,) = run(model, np.array([0.75, 3.0, 1.0e5], "float32"), np.array(2.0, "float32"))
    assert y.astype("float32").tolist() == [0.375, 1.5, 448.0]


def test_dequantize_uint2(make_model):
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])
    model = make_model(
        [node],
        [("x", TensorProto.UINT2, [4]), ("s", TensorProto.FLOAT, []), ("z", TensorProto.UINT2, [])],
        [("y", TensorProto.FLOAT, [4])],
        opset=25,
    )
    x = np.array([0, 1, 2, 3], ml_dtypes.uint2)
    (y,) = run(model, x, np.array(0.5, "float32"), np.array(1, ml_dtypes.uint2))
    assert y.dtype == np.float32 and y.tolist() == [-0.5, 0.0, 0.5, 1.0]


def test_bfloat16_arithmetic_is_computed_wide_and_rounded_per_node(make_model):
    nodes = [
        helper.make_node("Mul", ["a", "b"], ["p"]),
        helper.make_node("Softmax", ["p"], ["y"], axis=-1),
    ]
    bf = TensorProto.BFLOAT16
    model = make_model(nodes, [("a", bf, [2, 3]), ("b", bf, [2, 3])], [("y", bf, [2, 3])])
    mod, _ = relay.frontend.from_onnx(model)
    text = mod.astext()
    assert "Tensor[(2, 3), bfloat16]" in text and 'cast(%a, dtype="float32")' in text
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((2, 3)).astype(ml_dtypes.bfloat16)
    (y,) = run(model, a, b)
    assert y.dtype == ml_dtypes.bfloat16
    p = (a.astype("float32") * b.astype("float32")).astype(ml_dtypes.bfloat16).astype("float32")
    e = np.exp(p - p.max(axis=-1, keepdims=True))
    want = (e / e.sum(axis=-1, keepdims=True)).astype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(y.astype("float32"), want.astype("float32"), rtol=1e-2)


def test_integer_outputs_are_not_rounded_to_the_narrow_type(make_model):
    node = helper.make_node("ArgMax", ["x"], ["y"], axis=0, keepdims=0)
    model = make_model([node], [("x", TensorProto.BFLOAT16, [4])], [("y", TensorProto.INT64, [])])
    (y,) = run(model, np.array([1.0, 5.0, -2.0, 3.0], ml_dtypes.bfloat16))
    assert y.dtype == np.int64 and int(y) == 1


def test_without_ml_dtypes_the_frontend_asks_for_it(monkeypatch):
    monkeypatch.delitem(_onnx_proto._DTYPES, TensorProto.BFLOAT16)
    monkeypatch.delitem(DTYPES, "bfloat16")
    with pytest.raises(MissingDependencyError, match="pip install ml_dtypes"):
        _onnx_proto.onnx_dtype_name(TensorProto.BFLOAT16, "graph input 'x'")
    with pytest.raises(FrontendError, match="element type STRING is not supported"):
        _onnx_proto.onnx_dtype_name(TensorProto.STRING, "graph input 'x'")
