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
