"""``qnn.quantize``'s rounding of halves: away from zero (TVM, the default), up, or to
even (ONNX's QuantizeLinear), the kernel and the canonical form alike; the ONNX frontend
asks for halves to even and agrees with onnxruntime on exact ties."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import ArgumentError, AttrError

from .test_qnn_ops import both

# x / 0.5 lands exactly on halves: -2.5 .. 2.5
TIES = np.array([-1.25, -0.75, -0.25, 0.25, 0.75, 1.25, 0.3, -0.3], dtype="float32")


def _decimal(v: float, mode: str) -> int:
    if mode == "UPWARD":  # halves up, towards +inf
        return int(np.floor(Decimal(repr(v)) + Decimal("0.5")))
    how = ROUND_HALF_EVEN if mode == "TONEAREST_EVEN" else ROUND_HALF_UP  # HALF_UP: away
    return int(Decimal(repr(v)).quantize(Decimal(1), rounding=how))


@pytest.mark.parametrize("mode", ["TONEAREST", "UPWARD", "TONEAREST_EVEN"])
def test_halves_go_where_the_mode_says(mode):
    x = relay.var("x", shape=TIES.shape, dtype="float32")
    y = relay.qnn.op.quantize(x, relay.const(0.5), relay.const(3), out_dtype="int8", rounding=mode)
    got = both(y, [x], [TIES])
    want = [_decimal(float(v) / 0.5, mode) + 3 for v in TIES.astype(np.float64)]
    assert got.tolist() == want


def test_the_default_is_tvm_s_halves_away_from_zero():
    x = relay.var("x", shape=TIES.shape, dtype="float32")
    y = relay.qnn.op.quantize(x, relay.const(0.5), relay.const(0), out_dtype="int8")
    assert y.attrs.rounding == "TONEAREST"
    assert both(y, [x], [TIES]).tolist()[:3] == [-3, -2, -1]


def test_an_unknown_mode_is_refused():
    x = relay.var("x", shape=(2,), dtype="float32")
    with pytest.raises(AttrError, match="TONEAREST_EVEN"):
        relay.qnn.op.quantize(x, relay.const(0.5), relay.const(0), rounding="nearest")


def test_onnx_quantize_linear_ties_match_onnxruntime():
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    from relaykit.frontend.onnx import from_onnx

    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    graph = helper.make_graph(
        [node],
        "q",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(TIES.shape))],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, list(TIES.shape))],
        [
            helper.make_tensor("s", TensorProto.FLOAT, [], [0.5]),
            helper.make_tensor("z", TensorProto.UINT8, [], [128]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": TIES})[0]
    mod, params = from_onnx(onnx.load_from_string(model.SerializeToString()))
    got = relay.create_executor("debug", mod=mod).evaluate()(TIES, **params).numpy()
    np.testing.assert_array_equal(got, want)
    assert got.tolist()[:3] == [126, 126, 128]  # -2.5 -> -2, -1.5 -> -2, -0.5 -> 0


# -- requantize: the same three modes, in Q31 fixed point and in float ----------------------

ODD = np.array([-7, -5, -3, -1, 1, 3, 5, 7, 2, -2], dtype="int32")  # x * 0.5: halves


@pytest.mark.parametrize("compute", ["int64", "float32", "float64"])
@pytest.mark.parametrize("mode", ["TONEAREST", "UPWARD", "TONEAREST_EVEN"])
def test_requantize_halves_go_where_the_mode_says(mode, compute):
    x = relay.var("x", shape=ODD.shape, dtype="int32")
    y = relay.qnn.op.requantize(
        x, relay.const(np.float32(0.25)), relay.const(0), relay.const(np.float32(0.5)),
        relay.const(3), rounding=mode, compute_dtype=compute, out_dtype="int8",
    )  # fmt: skip
    got = both(y, [x], [ODD])
    if compute == "int64" or mode == "TONEAREST_EVEN":  # the product rounded, then + zp
        want = [_decimal(float(v) * 0.5, mode) + 3 for v in ODD]
    else:  # TVM's float lowering adds the zero point before it rounds
        want = [_decimal(float(v) * 0.5 + 3, mode) for v in ODD]
    assert got.tolist() == want


def test_requantize_in_float32_rounds_before_the_zero_point():
    """``TONEAREST_EVEN`` in float32 is onnxruntime's ``rint(acc * scale) + zp``: a product
    just below a half stays below it (TVM's modes add the zero point first, which can lose
    that last bit)."""
    scale = np.float32(1.0) / np.float32(3.0)
    acc = np.array([3 * 12345 + 1, 7, -7, 1000001], dtype="int32")
    x = relay.var("x", shape=acc.shape, dtype="int32")
    y = relay.qnn.op.requantize(
        x, relay.const(scale), relay.const(0), relay.const(np.float32(1.0)), relay.const(100),
        rounding="TONEAREST_EVEN", compute_dtype="float32", out_dtype="int32",
    )  # fmt: skip
    want = np.rint(acc.astype(np.float32) * scale).astype(np.int64) + 100
    assert both(y, [x], [acc]).tolist() == want.tolist()


def test_onnx_qlinear_conv_equals_onnxruntime_bit_for_bit():
    """QLinearConv requantizes as ONNX specifies and onnxruntime computes (float32 scale,
    halves to even), so every output equals onnxruntime's, not only within one step."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    from relaykit.frontend.onnx import from_onnx

    rng = np.random.default_rng(5)
    x = rng.integers(0, 256, (1, 8, 12, 12)).astype(np.uint8)
    w = rng.integers(-127, 128, (16, 8, 3, 3)).astype(np.int8)
    inits = {
        "xs": np.array(0.021, np.float32), "xz": np.array(117, np.uint8),
        "ws": rng.uniform(0.002, 0.01, 16).astype(np.float32), "wz": np.zeros(16, np.int8),
        "ys": np.array(0.37, np.float32), "yz": np.array(121, np.uint8),
        "b": rng.integers(-5000, 5000, 16).astype(np.int32),
    }  # fmt: skip
    node = helper.make_node(
        "QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], pads=[1] * 4
    )
    graph = helper.make_graph(
        [node], "c",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, k) for k, v in {**inits, "w": w}.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    mod, params = from_onnx(model, {"x": x.shape})
    got = relay.create_executor("graph", mod=mod).evaluate()(x, **params).numpy()
    assert onnx is not None
    np.testing.assert_array_equal(got, want)


# -- qnn.requantize: rounding in every compute dtype, and requantize_config ------------------------

# x / 16 lands on halves at +-8 and +-24
REQ = np.arange(-32, 33, 4, dtype="int32")


def _requant_want(mode: str) -> list[int]:
    return [_decimal(float(v) / 16.0, "UPWARD" if mode == "UPWARD" else "TONEAREST") for v in REQ]


@pytest.mark.parametrize("compute_dtype", ["int64", "float32", "float64"])
@pytest.mark.parametrize("mode", ["UPWARD", "TONEAREST"])
def test_requantize_rounds_halves_as_asked_in_every_compute_dtype(mode, compute_dtype):
    x = relay.var("x", shape=REQ.shape, dtype="int32")
    args = (relay.const(1.0), relay.const(0), relay.const(16.0), relay.const(0))
    y = relay.qnn.op.requantize(
        x, *args, rounding=mode, compute_dtype=compute_dtype, out_dtype="int8"
    )
    assert both(y, [x], [REQ]).tolist() == _requant_want(mode)


def test_requantize_config_fills_in_none_and_call_arguments_win():
    x = relay.var("x", shape=REQ.shape, dtype="int32")
    args = (relay.const(1.0), relay.const(0), relay.const(16.0), relay.const(0))
    plain = relay.qnn.op.requantize(x, *args, out_dtype="int8")
    upward = relay.qnn.op.requantize(x, *args, rounding="UPWARD", out_dtype="int8")
    assert both(plain, [x], [REQ]).tolist() == _requant_want("UPWARD")  # TVM's default
    with relay.qnn.requantize_config(rounding="TONEAREST", compute_dtype="float32"):
        assert relay.qnn.current_requantize_config().compute_dtype == "float32"
        assert both(plain, [x], [REQ]).tolist() == _requant_want("TONEAREST")
        assert both(upward, [x], [REQ]).tolist() == _requant_want("UPWARD")
    assert relay.qnn.current_requantize_config().is_default
    with (
        pytest.raises(ArgumentError, match="rounding"),
        relay.qnn.requantize_config(rounding="DOWN"),
    ):
        pass
