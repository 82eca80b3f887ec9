"""float32 convolutions and matrix products round their sums once (squeezenet regression).

squeezenet's last 1x1 convolution has 1000 output channels with equal weights and logits
near 1e10; float32 BLAS rounded different channels differently (by one ulp, 1024 there),
and the following softmax turned that ulp into 0.0033 for 304 classes and 0 for the rest,
where onnxruntime and the stored output give 0.001 for every class.
"""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.op import nn


def _equal_channel_inputs(rng, o=1000, c=512, hw=13):
    x = (rng.random((1, c, hw, hw)) * 1e8).astype("float32")
    w = np.broadcast_to((rng.random((1, c, 1, 1)) * 0.5).astype("float32"), (o, c, 1, 1))
    return x, np.ascontiguousarray(w)


def test_conv2d_equal_weights_give_equal_channels(run, tvar, rng):
    x, w = _equal_channel_inputs(rng)
    call = nn.conv2d(tvar("x", x.shape), tvar("w", w.shape), kernel_size=(1, 1), channels=1000)
    out = run(call, x, w)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.broadcast_to(out[:, :1], out.shape))
    exact = np.einsum("nchw,oc->nohw", x.astype("f8"), w[:, :, 0, 0].astype("f8"))
    np.testing.assert_array_equal(out, exact.astype("float32"))


def test_dense_equal_rows_give_equal_outputs(run, tvar, rng):
    x = (rng.random((4, 512)) * 1e8).astype("float32")
    w = np.ascontiguousarray(np.broadcast_to(rng.random((1, 512)).astype("float32"), (1000, 512)))
    out = run(nn.dense(tvar("x", x.shape), tvar("w", w.shape)), x, w)
    np.testing.assert_array_equal(out, np.broadcast_to(out[:, :1], out.shape))
    np.testing.assert_array_equal(out, (x.astype("f8") @ w.T.astype("f8")).astype("float32"))


def test_onnx_squeezenet_tail_matches_onnxruntime():
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    from relaykit import relay
    from relaykit.frontend import from_onnx

    rng = np.random.default_rng(1)
    x, w = _equal_channel_inputs(rng)
    b = np.full((1000,), 3.0, "float32")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"]),
        helper.make_node("Softmax", ["g"], ["y"]),  # opset 9: axis=1, flattened to 2-D
    ]
    graph = helper.make_graph(
        nodes,
        "tail",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000, 1, 1])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x}
    )[0]
    mod, params = from_onnx(model)
    out = relay.create_executor("debug", mod=mod).evaluate()(x, **params).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(out, 1e-3, rtol=1e-5)
