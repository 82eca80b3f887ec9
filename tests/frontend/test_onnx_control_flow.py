"""Control flow and recurrent layers: If becomes a Relay If (or its branch), Loop and
Scan unroll when their counts are known at import (a Loop is a recursive function on the
Relay VM otherwise), LSTM matches onnxruntime."""

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


def _counting_body(stop_at: float | None):
    """acc += x each iteration; scan out acc * i; with ``stop_at``, continue while the
    sum of acc is below it (a condition computed at run time)."""
    nodes = [
        helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
        helper.make_node("Cast", ["i"], ["fi"], to=F),
        helper.make_node("Mul", ["acc_out", "fi"], ["scan"]),
    ]
    if stop_at is None:
        nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    else:
        nodes += [
            helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
            helper.make_node("Less", ["total", "limit"], ["cond_out"]),
        ]
    return helper.make_graph(
        nodes,
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", F, [2]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", F, [2]),
            helper.make_tensor_value_info("scan", F, [2]),
        ],
    )


def _check_against_reference(model, feeds):
    from onnx.reference import ReferenceEvaluator

    from relaykit.frontend.onnx.backend import RelayKitBackend

    want = ReferenceEvaluator(model).run(None, feeds)
    rep = RelayKitBackend.prepare(model)
    assert rep.dynamic  # a recursive function: compiled once for the VM
    got = rep.run(feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6)
    return got


def _trip_count_model(make_model):
    return make_model(
        [helper.make_node("Loop", ["M", "c", "acc0"], ["acc", "scans"], body=_counting_body(None))],
        [("M", TensorProto.INT64, []), ("x", F, [2]), ("acc0", F, [2])],
        [("acc", F, [2]), ("scans", F, None)],
        [numpy_helper.from_array(np.array(True), "c")],
        opset=13,
    )


@pytest.mark.parametrize("trip", [1, 4, 7])
def test_loop_with_a_run_time_trip_count_is_a_recursive_function(make_model, trip):
    x = np.array([1.0, 2.0], "float32")
    feeds = {"M": np.array(trip, "int64"), "x": x, "acc0": np.zeros(2, "float32")}
    acc, scans = _check_against_reference(_trip_count_model(make_model), feeds)
    np.testing.assert_allclose(acc, trip * x)
    assert scans.shape == (trip, 2)


def test_loop_of_zero_iterations_returns_its_initial_state(make_model):
    from relaykit.frontend.onnx.backend import RelayKitBackend

    # (onnx's reference evaluator cannot stack an empty scan output)
    acc0 = np.array([3.0, 4.0], "float32")
    rep = RelayKitBackend.prepare(_trip_count_model(make_model))
    acc, scans = rep.run([np.array(0, "int64"), np.ones(2, "float32"), acc0])
    np.testing.assert_array_equal(acc, acc0)
    assert scans.shape == (0, 2)


@pytest.mark.parametrize("limit", [0.5, 10.0, 40.0])
def test_loop_with_a_run_time_condition(make_model, limit):
    body = _counting_body(limit)
    model = make_model(
        [helper.make_node("Loop", ["M", "c", "acc0"], ["acc", "scans"], body=body)],
        [("x", F, [2]), ("acc0", F, [2]), ("limit", F, [])],
        [("acc", F, [2]), ("scans", F, None)],
        [
            numpy_helper.from_array(np.array(100, "int64"), "M"),
            numpy_helper.from_array(np.array(True), "c"),
        ],
        opset=13,
    )
    feeds = {
        "x": np.array([1.0, 2.0], "float32"),
        "acc0": np.zeros(2, "float32"),
        "limit": np.array(limit, "float32"),
    }
    _check_against_reference(model, feeds)


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


def test_if_whose_branches_differ_in_size_has_dynamic_dims(make_model):
    def branch(name, values):
        const = helper.make_node("Constant", [], [f"{name}_v"], value_floats=values)
        relu = helper.make_node("Relu", [f"{name}_v"], [f"{name}_y"])
        out = helper.make_tensor_value_info(f"{name}_y", F, None)
        return helper.make_graph([const, relu], name, [], [out])

    node = helper.make_node(
        "If", ["c"], ["y"], then_branch=branch("t", [1.0, -2.0]), else_branch=branch("e", [3.0])
    )
    model = make_model([node], [("c", TensorProto.BOOL, [])], [("y", F, None)], opset=13)
    mod, _ = from_onnx(model)
    assert str(mod["main"].body.checked_type) == "Tensor[(?), float32]"
    from onnx.reference import ReferenceEvaluator

    from relaykit.frontend.onnx.backend import RelayKitBackend

    rep = RelayKitBackend.prepare(model)
    for c in (True, False):
        (want,) = ReferenceEvaluator(model).run(None, {"c": np.array(c)})
        (got,) = rep.run([np.array(c)])
        np.testing.assert_array_equal(got, want)
