"""from_onnx: the Relay it produces, opset selection, folding, params, numbers vs onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from relaykit import relay
from relaykit.frontend import from_onnx, load_model
from relaykit.ir import assert_structural_equal

F = TensorProto.FLOAT


def _run(mod, *args, params=None):
    ex = relay.create_executor("debug", mod=mod, params=params)
    out = ex.evaluate()(*args)
    return tuple(o.numpy() for o in out) if isinstance(out, tuple) else out.numpy()


def test_conv_relu_imports_as_relay_ops(make_model):
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), "float32"), "w")
    model = make_model(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        [("x", F, [1, 3, 8, 8])],
        [("y", F, [1, 4, 4, 4])],
        [w],
    )
    mod, params = from_onnx(model)
    x = relay.var("x", shape=(1, 3, 8, 8))
    conv = relay.nn.conv2d(
        x,
        relay.const(np.ones((4, 3, 3, 3), "float32")),
        strides=(2, 2),
        padding=(1, 1, 1, 1),
        channels=4,
        kernel_size=(3, 3),
    )
    assert_structural_equal(mod["main"].body, relay.nn.relu(conv), map_free_vars=True)
    assert params == {}


def test_shape_chain_is_folded_to_a_constant_reshape(make_model):
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters write flatten."""
    model = make_model(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0))),
            helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
            helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
            helper.make_node("Constant", [], ["m1"], value=numpy_helper.from_array(np.array([-1]))),
            helper.make_node("Concat", ["n1", "m1"], ["shape"], axis=0),
            helper.make_node("Reshape", ["x", "shape"], ["y"]),
        ],
        [("x", F, [2, 3, 4])],
        [("y", F, [2, 12])],
        [numpy_helper.from_array(np.array([0], "int64"), "ax")],
        opset=13,
    )
    mod, _ = from_onnx(model)
    x = relay.var("x", shape=(2, 3, 4))
    assert_structural_equal(mod["main"].body, relay.reshape(x, (2, 12)), map_free_vars=True)


def test_converter_follows_the_opset(make_model):
    """Softmax before opset 13 normalises the flattened 2-D view; from 13 one axis."""
    x = np.arange(8, dtype="float32").reshape(1, 2, 4)
    node = helper.make_node("Softmax", ["x"], ["y"], axis=1)
    outs = {}
    for opset in (11, 13):
        model = make_model([node], [("x", F, [1, 2, 4])], [("y", F, [1, 2, 4])], opset=opset)
        mod, _ = from_onnx(model)
        outs[opset] = _run(mod, x)
    flat = np.exp(x.reshape(1, 8) - x.max()) / np.exp(x.reshape(1, 8) - x.max()).sum()
    np.testing.assert_allclose(outs[11], flat.reshape(1, 2, 4), rtol=1e-5)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(outs[13], e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_schema_defaults_become_keyword_arguments(make_model):
    node = helper.make_node("LeakyRelu", ["x"], ["y"])  # alpha defaults to 0.01
    mod, _ = from_onnx(make_model([node], [("x", F, [3])], [("y", F, [3])]))
    assert mod["main"].body.attrs.alpha == pytest.approx(0.01)


def test_freeze_params_false_returns_params(make_model):
    w = numpy_helper.from_array(np.full((2, 3), 2.0, "float32"), "w")
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", F, [1, 2])], [("y", F, [1, 3])], [w]
    )
    mod, params = from_onnx(model, freeze_params=False)
    assert list(params) == ["w"] and [p.name_hint for p in mod["main"].params] == ["x", "w"]
    x = np.array([[1.0, 2.0]], "float32")
    np.testing.assert_allclose(_run(mod, x, params=params), x @ np.full((2, 3), 2.0))


def test_shape_override_for_symbolic_dims(make_model):
    node = helper.make_node("Relu", ["x"], ["y"])
    model = make_model([node], [("x", F, ["N", 3])], [("y", F, ["N", 3])])
    mod, _ = from_onnx(model, shape={"x": (5, 3)})
    assert mod["main"].params[0].type_annotation.shape == (5, 3)


def _random_cnn(tmp_path, make_model):
    rng = np.random.default_rng(0)
    inits = {
        "w1": rng.standard_normal((8, 3, 3, 3)).astype("float32") * 0.3,
        "b1": rng.standard_normal(8).astype("float32"),
        "scale": rng.uniform(0.5, 1.5, 8).astype("float32"),
        "bias": rng.standard_normal(8).astype("float32"),
        "mean": rng.standard_normal(8).astype("float32"),
        "var": rng.uniform(0.5, 2.0, 8).astype("float32"),
        "wf": rng.standard_normal((10, 8 * 4 * 4)).astype("float32") * 0.1,
        "bf": rng.standard_normal(10).astype("float32"),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "scale", "bias", "mean", "var"], ["bn"]),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["g"], transB=1),
        helper.make_node("Softmax", ["g"], ["y"], axis=1),
    ]
    model = make_model(
        nodes,
        [("x", F, [1, 3, 8, 8])],
        [("y", F, [1, 10])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
        opset=13,
    )
    path = tmp_path / "cnn.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_random_cnn_matches_onnxruntime(tmp_path, make_model):
    ort = pytest.importorskip("onnxruntime")
    path = _random_cnn(tmp_path, make_model)
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype("float32")
    mod, _params = load_model(path)
    want = ort.InferenceSession(str(path)).run(None, {"x": x})[0]
    np.testing.assert_allclose(_run(mod, x), want, rtol=1e-4, atol=1e-6)
    opt = relay.transform.optimize(mod)
    np.testing.assert_allclose(_run(opt, x), want, rtol=1e-4, atol=1e-6)


def test_onnx_backend_runs_a_model(tmp_path, make_model):
    from relaykit.frontend.onnx import backend as onnx_backend

    path = _random_cnn(tmp_path, make_model)
    import onnx

    x = np.zeros((1, 3, 8, 8), "float32")
    (y,) = onnx_backend.run_model(onnx.load(str(path)), [x])
    assert y.shape == (1, 10) and y.sum() == pytest.approx(1.0, rel=1e-5)
    assert onnx_backend.RelayKitBackend.supports_device("CPU")
    assert not onnx_backend.RelayKitBackend.supports_device("CUDA")
    node = helper.make_node("Add", ["a", "b"], ["c"])
    (c,) = onnx_backend.run_node(node, [np.ones(2, "float32"), np.ones(2, "float32")])
    assert c.tolist() == [2.0, 2.0]


def test_backend_runs_value_dependent_shapes_on_the_vm(make_model):
    from relaykit.frontend.onnx.backend import RelayKitBackend

    i64 = TensorProto.INT64
    model = make_model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [("x", F, [2, 3]), ("shape", i64, [2])],
        [("y", F, None)],
    )
    rep = RelayKitBackend.prepare(model)
    # imported once: a dyn.reshape on the Relay VM, not a re-import per value
    assert rep.dynamic and not rep.specialized
    assert rep.mod["main"].body.op.name == "dyn.reshape"
    x = np.arange(6, dtype="float32").reshape(2, 3)
    (y,) = rep.run([x, np.array([3, 2], "int64")])
    np.testing.assert_array_equal(y, x.reshape(3, 2))
    (y,) = rep.run([x, np.array([6, 1], "int64")])
    np.testing.assert_array_equal(y, x.reshape(6, 1))


def test_reimport_fallback_is_named_and_off_by_default(make_model):
    from relaykit.errors import DynamicShapeError
    from relaykit.frontend.onnx.backend import RelayKitBackend, RelayKitReimportBackend

    # a scalar SplitToSequence split decides the sequence's length: not importable once
    model = make_model(
        [helper.make_node("SplitToSequence", ["x", "s"], ["y"])],
        [("x", F, [5, 2]), ("s", TensorProto.INT64, [])],
        [("y", F, None)],
    )
    model.graph.output[0].type.CopyFrom(
        helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
    )
    x = np.arange(10, dtype="float32").reshape(5, 2)
    with pytest.raises(DynamicShapeError, match="SplitToSequence"):
        RelayKitBackend.prepare(model)
    for rep in (
        RelayKitBackend.prepare(model, reimport_fallback=True),
        RelayKitReimportBackend.prepare(model),
    ):
        assert rep.specialized
        (parts,) = rep.run([x, np.array(2, "int64")])
        assert [p.tolist() for p in parts] == [x[:2].tolist(), x[2:4].tolist(), x[4:].tolist()]


def test_unfrozen_params_keep_integer_initializers_constant(make_model):
    w = numpy_helper.from_array(np.ones((6,), "float32"), "w")
    shape = numpy_helper.from_array(np.array([2, 3], "int64"), "shape")
    model = make_model(
        [
            helper.make_node("Mul", ["x", "w"], ["m"]),
            helper.make_node("Reshape", ["m", "shape"], ["y"]),
        ],
        [("x", F, [6])],
        [("y", F, [2, 3])],
        [w, shape],
    )
    mod, params = from_onnx(model, freeze_params=False)
    assert list(params) == ["w"]
    assert mod["main"].body.attrs.newshape == (2, 3)
