"""The light models shipped with onnx import, run and match their stored outputs and
onnxruntime. The big ones are marked slow (benchmarks/onnx_conformance.py runs them)."""

from __future__ import annotations

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import numpy_helper  # noqa: E402

from relaykit import relay  # noqa: E402
from relaykit.frontend import load_model  # noqa: E402
from relaykit.transform import optimize  # noqa: E402

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
SMALL = ["squeezenet", "shufflenet", "inception_v1", "resnet50"]
BIG = ["bvlc_alexnet", "zfnet512", "densenet121", "inception_v2", "vgg19"]


def _check(name: str) -> None:
    path = os.path.join(LIGHT, f"light_{name}.onnx")
    model = onnx.load(path)
    inits = {t.name for t in model.graph.initializer}
    vi = next(i for i in model.graph.input if i.name not in inits)
    shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    n = int(np.prod(shape))
    x = (np.arange(n).reshape(shape) / n).astype("float32")  # onnx's dummy input
    stored = numpy_helper.to_array(
        onnx.load_tensor(os.path.join(LIGHT, f"light_{name}_output_0.pb"))
    )
    mod, _ = load_model(path)
    out = relay.create_executor("debug", mod=optimize(mod)).evaluate()(x).numpy()
    np.testing.assert_allclose(out, stored, rtol=1e-3, atol=1e-7)
    ort = pytest.importorskip("onnxruntime")
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {vi.name: x})[0]
    np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("name", SMALL)
def test_light_model(name):
    _check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", BIG)
def test_light_model_big(name):
    _check(name)
