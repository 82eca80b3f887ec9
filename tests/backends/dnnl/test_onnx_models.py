"""The light ONNX models (shipped in the onnx package) run fully offloaded to oneDNN and
match onnxruntime and their stored outputs."""

from __future__ import annotations

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
numpy_helper = pytest.importorskip("onnx.numpy_helper")

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MODELS = [
    "resnet50", "vgg19", "densenet121", "inception_v1", "inception_v2", "squeezenet",
    "shufflenet", "bvlc_alexnet", "zfnet512",
]  # fmt: skip


@pytest.mark.parametrize("name", MODELS)
def test_light_model(dnnl, name):
    from relaykit.backends.dnnl import partition_for_dnnl
    from relaykit.frontend import from_onnx
    from relaykit.transform import PassContext

    path = os.path.join(LIGHT, f"light_{name}.onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} is not in this onnx package")
    model = onnx.load(path)
    # the light models make their weights with ConstantOfShape (vgg19's fc6 is 392 MiB,
    # above FoldConstant's default limit): raise the limit so that they become constants
    with PassContext(config={"relay.FoldConstant.max_bytes": 2**30}):
        mod, params = from_onnx(model)
        pmod = partition_for_dnnl(mod, params)
    assert dnnl.host_ops(pmod) == []
    assert len(dnnl.dnnl_functions(pmod)) == 1
    lib = dnnl.build(pmod)
    x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
    in_name = mod["main"].params[0].name_hint
    (got,) = dnnl.run_lib(lib, {in_name: x})
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {sess.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)
    stored = os.path.join(LIGHT, f"light_{name}_output_0.pb")
    if os.path.exists(stored):
        tensor = onnx.TensorProto()
        with open(stored, "rb") as f:
            tensor.ParseFromString(f.read())
        expected = numpy_helper.to_array(tensor)
        # The stored outputs are for onnx's dummy input: arange(n) / n.
        n = 3 * 224 * 224
        dummy = (np.arange(n).reshape(1, 3, 224, 224) / n).astype(np.float32)
        (out,) = dnnl.run_lib(lib, {in_name: dummy})
        np.testing.assert_allclose(out.reshape(expected.shape), expected, rtol=1e-3, atol=1e-6)
