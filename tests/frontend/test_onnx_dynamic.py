"""ONNX models imported once: symbolic dimensions are ``?``, run-time axes and shapes build
dynamic operators, and one compiled program (on the Relay VM) serves every input value
and shape. Checked against NumPy and onnx's reference evaluator."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from relaykit.frontend import from_onnx
from relaykit.frontend.onnx.backend import RelayKitBackend

F, I64 = TensorProto.FLOAT, TensorProto.INT64
RNG = np.random.default_rng(3)


def test_a_dynamic_batch_mlp_runs_every_batch_from_one_import(make_model):
    w1 = RNG.standard_normal((4, 8)).astype("float32")
    b1 = RNG.standard_normal(8).astype("float32")
    w2 = RNG.standard_normal((8, 3)).astype("float32")
    model = make_model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"]),
            helper.make_node("Add", ["h", "b1"], ["hb"]),
            helper.make_node("Relu", ["hb"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["logits"]),
            helper.make_node("Softmax", ["logits"], ["y"], axis=-1),
        ],
        [("x", F, ["batch", 4])],
        [("y", F, ["batch", 3])],
        [numpy_helper.from_array(v, n) for n, v in (("w1", w1), ("b1", b1), ("w2", w2))],
    )
    rep = RelayKitBackend.prepare(model)
    assert rep.dynamic
    assert str(rep.mod["main"].params[0].checked_type) == "Tensor[(?, 4), float32]"
    for batch in (1, 3, 8):
        x = RNG.standard_normal((batch, 4)).astype("float32")
        logits = np.maximum(x @ w1 + b1, 0) @ w2
        want = np.exp(logits - logits.max(-1, keepdims=True))
        want /= want.sum(-1, keepdims=True)
        (y,) = rep.run([x])
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_shape_of_a_dynamic_input_is_computed_at_run_time(make_model):
    model = make_model(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Size", ["x"], ["n"]),
            helper.make_node("ConstantOfShape", ["s"], ["z"]),
        ],
        [("x", F, ["a", 2, "b"])],
        [("s", I64, [3]), ("n", I64, []), ("z", F, None)],
    )
    rep = RelayKitBackend.prepare(model)
    for shape in ((1, 2, 5), (4, 2, 1)):
        s, n, z = rep.run([np.ones(shape, "float32")])
        assert s.tolist() == list(shape) and int(n) == np.prod(shape)
        np.testing.assert_array_equal(z, np.zeros(shape, "float32"))


def test_reduce_over_run_time_axes_from_one_import(make_model):
    model = make_model(
        [helper.make_node("ReduceL2", ["x", "axes"], ["y"], keepdims=0)],
        [("x", F, [2, 3, 4]), ("axes", I64, [1])],
        [("y", F, None)],
        opset=18,
    )
    rep = RelayKitBackend.prepare(model)
    assert rep.mod["main"].body.args[0].op.name == "dyn.sum"
    x = RNG.standard_normal((2, 3, 4)).astype("float32")
    for axis in (0, 1, 2, -1):
        (y,) = rep.run([x, np.array([axis], "int64")])
        np.testing.assert_allclose(y, np.sqrt((x * x).sum(axis)), rtol=1e-5)


def test_a_sequence_input_is_pinned_by_its_element_shapes(make_model):
    model = make_model(
        [
            helper.make_node("ConcatFromSequence", ["xs"], ["cat"], axis=0),
            helper.make_node("SequenceLength", ["xs"], ["n"]),
        ],
        [("v", F, [1])],  # replaced by the sequence input below
        [("cat", F, None), ("n", I64, [])],
    )
    seq = helper.make_tensor_sequence_value_info("xs", F, None)
    model.graph.input.pop()
    model.graph.input.append(seq)
    mod, _ = from_onnx(model, shape={"xs": [(2, 3), (4, 3)]})
    assert [p.name_hint for p in mod["main"].params] == ["xs_0", "xs_1"]
    a, b = (RNG.standard_normal(s).astype("float32") for s in ((2, 3), (4, 3)))
    want = ReferenceEvaluator(model).run(None, {"xs": [a, b]})
    got = RelayKitBackend.run_model(model, [[a, b]])
    np.testing.assert_array_equal(got[0], want[0])
    assert int(got[1]) == 2


def test_a_pinned_dimension_can_stay_dynamic(make_model):
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2, 3])], [("y", F, None)]
    )
    mod, _ = from_onnx(model, shape={"x": (None, 3)})
    assert str(mod["main"].params[0].checked_type) == "Tensor[(?, 3), float32]"


@pytest.mark.parametrize("k", [1, 3])
def test_topk_with_a_run_time_k(make_model, k):
    model = make_model(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)],
        [("x", F, [2, 5]), ("k", I64, [1])],
        [("v", F, None), ("i", I64, None)],
        opset=11,
    )
    x = RNG.standard_normal((2, 5)).astype("float32")
    want = ReferenceEvaluator(model).run(None, {"x": x, "k": np.array([k])})
    got = RelayKitBackend.prepare(model).run([x, np.array([k], "int64")])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def _c(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


_I = np.array  # int64 vectors below
BATCH_CASES = {
    "flatten": ([helper.make_node("Flatten", ["x"], ["y"], axis=1)], []),
    "flatten_lead": ([helper.make_node("Flatten", ["x"], ["y"], axis=3)], []),
    "reshape_0_-1": (
        [helper.make_node("Reshape", ["x", "s"], ["y"])],
        [_c("s", _I([0, -1], "int64"))],
    ),
    "unsqueeze": (
        [helper.make_node("Unsqueeze", ["x", "a"], ["y"])],
        [_c("a", _I([1, -1], "int64"))],
    ),
    "squeeze": (
        [
            helper.make_node("Unsqueeze", ["x", "a"], ["t"]),
            helper.make_node("Squeeze", ["t", "a"], ["y"]),
        ],
        [_c("a", _I([1], "int64"))],
    ),
    "split_even": ([helper.make_node("Split", ["x"], ["y", "z"], axis=0, num_outputs=2)], []),
    "gemm": (
        [
            helper.make_node("Flatten", ["x"], ["f"]),
            helper.make_node("Gemm", ["f", "w", "b"], ["y"], transB=1),
        ],
        [_c("w", np.ones((2, 60), "float32")), _c("b", np.ones(2, "float32"))],
    ),
    "expand": ([helper.make_node("Expand", ["x", "s"], ["y"])], [_c("s", _I([1, 1, 1, 5]))]),
    "conv_pool": (
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2]),
        ],
        [_c("w", RNG.standard_normal((2, 3, 3, 3)).astype("float32"))],
    ),
    "shape_gather_reshape": (
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
            helper.make_node("Unsqueeze", ["b", "a0"], ["bu"]),
            helper.make_node("Concat", ["bu", "m1"], ["ns"], axis=0),
            helper.make_node("Reshape", ["x", "ns"], ["y"]),
        ],
        [_c("i0", _I(0, "int64")), _c("a0", _I([0], "int64")), _c("m1", _I([-1], "int64"))],
    ),
}


@pytest.mark.parametrize("name", sorted(BATCH_CASES))
def test_common_ops_on_a_symbolic_batch(make_model, name):
    nodes, inits = BATCH_CASES[name]
    outs = [(o, F, None) for o in nodes[-1].output]
    model = make_model(nodes, [("x", F, ["N", 3, 4, 5])], outs, inits, opset=18)
    rep = RelayKitBackend.prepare(model)
    assert rep.dynamic
    for batch in (1, 4):
        x = RNG.standard_normal((batch, 3, 4, 5)).astype("float32")
        want = ReferenceEvaluator(model).run(None, {"x": x})
        got = rep.run([x])
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
