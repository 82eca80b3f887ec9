"""Each quantized ONNX operator imports to QNN operators and matches onnxruntime
(optimizations off): integers equal on at least 99% of elements and one step off
elsewhere (exact where onnxruntime and QNN round the same way)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relaykit import relay  # noqa: E402
from relaykit.ir.expr import Call  # noqa: E402
from relaykit.ir.op import Op  # noqa: E402

MS = "com.microsoft"
RNG = np.random.default_rng(7)
ELEM = {np.dtype("uint8"): TensorProto.UINT8, np.dtype("int8"): TensorProto.INT8}
ELEM[np.dtype("float32")] = TensorProto.FLOAT
ELEM[np.dtype("int32")] = TensorProto.INT32


def _model(nodes, inputs: dict[str, np.ndarray], outputs: dict[str, np.dtype], inits: dict):
    graph = helper.make_graph(
        nodes,
        "q",
        [helper.make_tensor_value_info(k, ELEM[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, ELEM[np.dtype(t)], None) for k, t in outputs.items()],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def _run_both(model, feeds) -> tuple[list[np.ndarray], list[np.ndarray], Counter]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    mod, params = relay.frontend.from_onnx(model, {k: v.shape for k, v in feeds.items()})
    counts: Counter = Counter()

    def visit(e) -> None:
        if isinstance(e, Call) and isinstance(e.op, Op):
            counts[e.op.name] += 1

    relay.analysis.post_order_visit(mod["main"], visit)
    out = relay.create_executor("graph", mod=mod, params=params).evaluate()(**feeds)
    got = [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]
    return got, want, counts


def _close_ints(got: np.ndarray, want: np.ndarray, exact: bool = False) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    d = np.abs(got.astype(np.int64) - want.astype(np.int64))
    if exact:
        np.testing.assert_array_equal(got, want)
    assert np.mean(d == 0) >= 0.99 and d.max() <= 1, (np.mean(d == 0), d.max())


def _q(shape, dtype="uint8"):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def _s(v: float) -> np.ndarray:
    return np.array(v, np.float32)


def _z(v: int, dtype="uint8") -> np.ndarray:
    return np.array(v, dtype)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_qlinear_add_and_mul(dtype):
    a, b = _q((2, 3, 4), dtype), _q((3, 4), dtype)  # broadcasting B
    zp = 3 if dtype == "uint8" else -2
    inits = {"sa": _s(0.05), "za": _z(zp, dtype), "sb": _s(0.02), "zb": _z(zp + 4, dtype)}
    inits |= {"sc": _s(0.07), "zc": _z(zp + 1, dtype)}
    ins = ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"]
    nodes = [
        helper.make_node("QLinearAdd", ins, ["add"], domain=MS),
        helper.make_node("QLinearMul", ins, ["mul"], domain=MS),
    ]
    model = _model(nodes, {"a": a, "b": b}, {"add": dtype, "mul": dtype}, inits)
    got, want, counts = _run_both(model, {"a": a, "b": b})
    for g, w in zip(got, want, strict=True):
        _close_ints(g, w)
    assert counts["qnn.quantize"] == 2 and counts["qnn.dequantize"] == 4


def test_qlinear_concat():
    xs = [_q((1, 2, 3)), _q((1, 4, 3))]
    inits = {"sy": _s(0.1), "zy": _z(128), "s0": _s(0.05), "z0": _z(120), "s1": _s(0.2)}
    inits["z1"] = _z(130)
    node = helper.make_node(
        "QLinearConcat", ["sy", "zy", "x0", "s0", "z0", "x1", "s1", "z1"], ["y"], domain=MS, axis=1
    )
    model = _model([node], {"x0": xs[0], "x1": xs[1]}, {"y": "uint8"}, inits)
    got, want, counts = _run_both(model, {"x0": xs[0], "x1": xs[1]})
    _close_ints(got[0], want[0], exact=True)
    assert counts["qnn.dequantize"] == 2 and counts["qnn.quantize"] == 1


@pytest.mark.parametrize("op_type", ["QLinearLeakyRelu", "QLinearSigmoid"])
def test_qlinear_unary(op_type):
    x = _q((2, 50), "int8")
    inits = {"sx": _s(0.03), "zx": _z(-5, "int8"), "sy": _s(0.02), "zy": _z(3, "int8")}
    attrs = {"alpha": 0.1} if op_type == "QLinearLeakyRelu" else {}
    node = helper.make_node(op_type, ["x", "sx", "zx", "sy", "zy"], ["y"], domain=MS, **attrs)
    got, want, counts = _run_both(_model([node], {"x": x}, {"y": "int8"}, inits), {"x": x})
    _close_ints(got[0], want[0])
    if op_type == "QLinearSigmoid":
        assert counts["qnn.sigmoid"] == 1
    else:
        np.testing.assert_array_equal(got[0], want[0])
        assert counts["qnn.quantize"] == 1 and counts["nn.leaky_relu"] == 1


@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_pools(channels_last):
    x = _q((1, 6, 6, 4) if channels_last else (1, 4, 6, 6))
    inits = {"sx": _s(0.05), "zx": _z(100), "sy": _s(0.04), "zy": _z(90)}
    ins = ["x", "sx", "zx", "sy", "zy"]
    nodes = [
        helper.make_node(
            "QLinearGlobalAveragePool", ins, ["g"], domain=MS, channels_last=channels_last
        ),
        helper.make_node(
            "QLinearAveragePool",
            ins,
            ["p"],
            domain=MS,
            channels_last=channels_last,
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            count_include_pad=0,
        ),
    ]
    model = _model(nodes, {"x": x}, {"g": "uint8", "p": "uint8"}, inits)
    got, want, _ = _run_both(model, {"x": x})
    for g, w in zip(got, want, strict=True):
        _close_ints(g, w)


@pytest.mark.parametrize(("opset", "axis"), [(13, -1), (11, 1)])
def test_qlinear_softmax(opset, axis):
    x = _q((2, 3, 5))
    inits = {"sx": _s(0.1), "zx": _z(128), "sy": _s(1 / 256), "zy": _z(0)}
    node = helper.make_node(
        "QLinearSoftmax", ["x", "sx", "zx", "sy", "zy"], ["y"], domain=MS, axis=axis, opset=opset
    )
    got, want, _ = _run_both(_model([node], {"x": x}, {"y": "uint8"}, inits), {"x": x})
    _close_ints(got[0], want[0])


@pytest.mark.parametrize("quantized_out", [True, False])
def test_qgemm_per_channel(quantized_out):
    a, b = _q((3, 8)), _q((5, 8), "int8")  # transB
    c = RNG.integers(-300, 300, (5,)).astype(np.int32)
    inits = {"sa": _s(0.02), "za": _z(128), "b": b, "c": c}
    inits |= {"sb": np.linspace(0.01, 0.03, 5, dtype=np.float32), "zb": np.zeros(5, np.int8)}
    ins = ["a", "sa", "za", "b", "sb", "zb", "c"]
    if quantized_out:
        inits |= {"sy": _s(0.05), "zy": _z(120)}
        ins += ["sy", "zy"]
    node = helper.make_node("QGemm", ins, ["y"], domain=MS, transB=1)
    out = "uint8" if quantized_out else "float32"
    got, want, counts = _run_both(_model([node], {"a": a}, {"y": out}, inits), {"a": a})
    assert counts["qnn.dense"] == 1
    if quantized_out:
        _close_ints(got[0], want[0])
    else:
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def test_qlinear_matmul_per_column_and_batched():
    a, w = _q((2, 3, 8), "int8"), _q((8, 6), "int8")
    k = _q((2, 8, 4), "int8")
    inits = {"sa": _s(0.02), "za": _z(1, "int8"), "w": w, "zw": np.zeros(6, np.int8)}
    inits |= {"sw": np.linspace(0.005, 0.02, 6, dtype=np.float32), "sy": _s(0.1)}
    inits |= {"zy": _z(-3, "int8"), "sk": _s(0.03), "zk": _z(2, "int8")}
    nodes = [
        helper.make_node("QLinearMatMul", ["a", "sa", "za", "w", "sw", "zw", "sy", "zy"], ["y"]),
        helper.make_node("QLinearMatMul", ["a", "sa", "za", "k", "sk", "zk", "sy", "zy"], ["z"]),
    ]
    model = _model(nodes, {"a": a, "k": k}, {"y": "int8", "z": "int8"}, inits)
    got, want, counts = _run_both(model, {"a": a, "k": k})
    for g, w_ in zip(got, want, strict=True):
        _close_ints(g, w_)
    assert counts["qnn.dense"] == 1 and counts["qnn.batch_matmul"] == 1


def test_qlinear_conv_per_channel_with_bias():
    x, w = _q((1, 3, 9, 9)), _q((4, 3, 3, 3), "int8")
    inits = {"sx": _s(0.02), "zx": _z(128), "w": w, "zw": np.zeros(4, np.int8)}
    inits |= {"sw": np.array([0.01, 0.02, 0.015, 0.03], np.float32), "sy": _s(0.05)}
    inits |= {"zy": _z(100), "bias": RNG.integers(-500, 500, (4,)).astype(np.int32)}
    node = helper.make_node(
        "QLinearConv",
        ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "bias"],
        ["y"],
        strides=[2, 2],
        pads=[1, 0, 1, 2],
    )
    got, want, counts = _run_both(_model([node], {"x": x}, {"y": "uint8"}, inits), {"x": x})
    _close_ints(got[0], want[0])
    assert counts["qnn.conv2d"] == 1 and counts["qnn.requantize"] == 1


def test_integer_ops_with_constant_zero_points():
    x, w = _q((1, 2, 5, 5)), _q((3, 2, 2, 2))
    a, b = _q((4, 6)), _q((6, 3), "int8")
    inits = {"w": w, "zx": _z(9), "zw": _z(3), "b": b, "za": _z(12)}
    inits["zb"] = np.array([1, -2, 0], np.int8)
    nodes = [
        helper.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["c"]),
        helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["m"]),
    ]
    model = _model(nodes, {"x": x, "a": a}, {"c": "int32", "m": "int32"}, inits)
    got, want, counts = _run_both(model, {"x": x, "a": a})
    for g, w_ in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w_)
    assert counts["qnn.conv2d"] == 1 and counts["qnn.dense"] == 1


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_quantize_dequantize_per_axis(dtype):
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    lo = 0 if dtype == "uint8" else -3
    inits = {"s": np.array([0.01, 0.02, 0.05], np.float32)}
    inits["z"] = np.array([lo, lo + 2, lo + 5], dtype)
    inits |= {"s1": _s(0.03), "z1": _z(lo + 1, dtype)}
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], axis=-2),
        helper.make_node("QuantizeLinear", ["x", "s1", "z1"], ["q1"]),
    ]
    model = _model(nodes, {"x": x}, {"q": dtype, "d": "float32", "q1": dtype}, inits)
    got, want, counts = _run_both(model, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    np.testing.assert_array_equal(got[2], want[2])
    assert counts["qnn.quantize"] == 2 and counts["qnn.dequantize"] == 1


def test_dequantize_constant_weight_is_not_folded():
    """A constant weight keeps its qnn.dequantize (QDQ folding passes look for it)."""
    w = _q((4, 3), "int8")
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    inits = {"w": w, "s": np.full(4, 0.01, np.float32), "z": np.zeros(4, np.int8)}
    nodes = [
        helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wf"], axis=0),
        helper.make_node("Gemm", ["x", "wf"], ["y"], transB=1),
    ]
    got, want, counts = _run_both(_model(nodes, {"x": x}, {"y": "float32"}, inits), {"x": x})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    assert counts["qnn.dequantize"] == 1


@pytest.mark.parametrize("per_column", [False, True])
def test_dynamic_quantize_matmul_and_matmul_integer_to_float(per_column):
    """The operators onnxruntime's optimizer writes for dynamically quantized models."""
    x = RNG.standard_normal((2, 3, 8)).astype(np.float32)
    a = _q((2, 3, 8))
    b = _q((8, 5), "int8")
    sb = np.linspace(0.01, 0.03, 5, dtype=np.float32) if per_column else _s(0.02)
    zb = np.zeros(5, np.int8) if per_column else _z(0, "int8")
    inits = {"b": b, "sb": sb, "zb": zb, "bias": RNG.standard_normal(5).astype(np.float32)}
    inits |= {"sa": _s(0.04), "za": _z(120)}
    nodes = [
        helper.make_node("DynamicQuantizeMatMul", ["x", "b", "sb", "zb", "bias"], ["y"], domain=MS),
        helper.make_node(
            "MatMulIntegerToFloat", ["a", "b", "sa", "sb", "za", "zb", "bias"], ["z"], domain=MS
        ),
    ]
    model = _model(nodes, {"x": x, "a": a}, {"y": "float32", "z": "float32"}, inits)
    got, want, counts = _run_both(model, {"x": x, "a": a})
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert counts["qnn.dense"] == 2 and counts["qnn.quantize"] == 1
