"""Control flow and recurrent layers: If becomes a Relay If (or its branch), Loop and
Scan unroll, LSTM matches onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from relaykit import relay
from relaykit.frontend import from_onnx
from relaykit.ir import If

F = TensorProto.FLOAT


def _branch(name: str, op_type: str):
    out = helper.make_tensor_value_info(f"{name}_y", F, [2])
    return helper.make_graph([helper.make_node(op_type, ["x"], [f"{name}_y"])], name, [], [out])


def _if_model(make_model, cond_const: bool | None):
    nodes = []
    inputs = [("x", F, [2])]
    inits = []
    if cond_const is None:
        inputs.append(("c", TensorProto.BOOL, []))
    else:
        inits.append(numpy_helper.from_array(np.array(cond_const), "c"))
    nodes.append(
        helper.make_node(
            "If", ["c"], ["y"], then_branch=_branch("t", "Exp"), else_branch=_branch("e", "Neg")
        )
    )
    return make_model(nodes, inputs, [("y", F, [2])], inits, opset=13)


def test_if_on_a_runtime_condition_becomes_relay_if(make_model):
    mod, _ = from_onnx(_if_model(make_model, None))
    body = mod["main"].body
    assert isinstance(body.tuple_value, If)
    run = relay.create_executor("debug", mod=mod).evaluate()
    x = np.array([0.0, 1.0], "float32")
    np.testing.assert_allclose(run(x, np.array(True)).numpy(), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(run(x, np.array(False)).numpy(), -x)


def test_if_on_a_constant_condition_takes_the_branch(make_model):
    mod, _ = from_onnx(_if_model(make_model, False))
    assert mod["main"].body.op.name == "negative"


def test_loop_with_trip_count_unrolls(make_model):
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", F, [2]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", F, [2]),
        ],
    )
    model = make_model(
        [helper.make_node("Loop", ["M", "", "acc0"], ["acc"], body=body)],
        [("x", F, [2]), ("acc0", F, [2])],
        [("acc", F, [2])],
        [numpy_helper.from_array(np.array(3, "int64"), "M")],
        opset=13,
    )
    mod, _ = from_onnx(model)
    x = np.array([1.0, 2.0], "float32")
    out = relay.create_executor("debug", mod=mod).evaluate()(x, np.zeros(2, "float32"))
    np.testing.assert_allclose(out.numpy(), 3 * x)


def test_lstm_matches_onnxruntime(make_model, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(0)
    seq, batch, inp, hid = 4, 2, 3, 5
    w = numpy_helper.from_array(rng.standard_normal((2, 4 * hid, inp)).astype("float32"), "W")
    r = numpy_helper.from_array(rng.standard_normal((2, 4 * hid, hid)).astype("float32"), "R")
    b = numpy_helper.from_array(rng.standard_normal((2, 8 * hid)).astype("float32"), "B")
    node = helper.make_node(
        "LSTM", ["x", "W", "R", "B"], ["y", "yh"], hidden_size=hid, direction="bidirectional"
    )
    model = make_model(
        [node],
        [("x", F, [seq, batch, inp])],
        [("y", F, [seq, 2, batch, hid]), ("yh", F, [2, batch, hid])],
        [w, r, b],
        opset=14,
    )
    path = tmp_path / "lstm.onnx"
    path.write_bytes(model.SerializeToString())
    x = rng.standard_normal((seq, batch, inp)).astype("float32")
    want = ort.InferenceSession(str(path)).run(None, {"x": x})
    mod, _ = from_onnx(model)
    got = relay.create_executor("debug", mod=mod).evaluate()(x)
    for g, w_ in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w_, rtol=1e-4, atol=1e-5)
