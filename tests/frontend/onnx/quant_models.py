"""Quantized ONNX models for the tests and benchmarks/onnx_quantized.py: ResNet-18,
MobileNetV2 and a BERT-like encoder from the plain-PyTorch zoo
(tests/frontend/pytorch/torch_models.py) with random weights, exported at opset 17 and
quantized by onnxruntime's quantizer (static QDQ U8S8 / S8S8, per tensor or per channel;
QOperator; dynamic) with random calibration data; and the checks that compare relaykit's
results with onnxruntime's.

Loaded by file path (``load_by_path``), like torch_models.py.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).parent
MODELS = ("resnet18", "mobilenet_v2", "bert")
SCHEMES = ("qdq_u8s8", "qdq_s8s8", "qdq_s8s8_per_channel", "qop", "qop_per_channel", "dynamic")


def zoo() -> Any:
    name = "relaykit_tests_torch_models"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, HERE.parent / "pytorch" / "torch_models.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def torch_model(name: str, full: bool = False) -> tuple[Any, tuple[Any, ...], list[str]]:
    """``(model, example_args, input_names)``: small (1x3x64x64 images, narrow layers; a
    2-layer 32-wide encoder over 8 tokens) unless ``full``."""
    import torch

    torch.manual_seed(0)  # the zoo draws the layers' weights from torch's global generator
    z = zoo()
    if full:
        model, args = z.full_size(name)
    elif name == "resnet18":
        model, args = z.randomize(z.resnet18(num_classes=10, width=8)), (z.cnn_input(64),)
    elif name == "mobilenet_v2":
        model = z.randomize(z.mobilenet_v2(num_classes=10, width_mult=0.25))
        args = (z.cnn_input(64),)
    else:
        model, args = z.small("bert")
    names = ["input_ids", "attention_mask"] if name == "bert" else ["x"]
    return model, args, names


def export(name: str, path: Path, full: bool = False) -> dict[str, np.ndarray]:
    """Export model ``name`` to ``path`` (opset 17); its example inputs by name."""
    import torch

    model, args, names = torch_model(name, full)
    with warnings.catch_warnings():  # the TorchScript exporter says it is the legacy one
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(model, args, str(path), opset_version=17, input_names=names, dynamo=False)
    return {n: a.numpy() for n, a in zip(names, args, strict=True)}


def _calibration(feeds: dict[str, np.ndarray], count: int = 4, seed: int = 1) -> Any:
    from onnxruntime.quantization import CalibrationDataReader

    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(count):
        batch = {}
        for k, v in feeds.items():
            if v.dtype.kind == "f":
                batch[k] = rng.standard_normal(v.shape).astype(v.dtype)
            else:
                batch[k] = v
        batches.append(batch)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(batches)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    return Reader()


def quantize(src: Path, dst: Path, scheme: str, feeds: dict[str, np.ndarray]) -> Path:
    """Quantize the float model ``src`` into ``dst`` with onnxruntime's quantizer."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    if scheme == "dynamic":
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8)
        return dst
    fmt = QuantFormat.QOperator if scheme.startswith("qop") else QuantFormat.QDQ
    act = QuantType.QUInt8 if scheme in ("qdq_u8s8", "qop", "qop_per_channel") else QuantType.QInt8
    quantize_static(
        str(src),
        str(dst),
        _calibration(feeds),
        quant_format=fmt,
        activation_type=act,
        weight_type=QuantType.QInt8,
        per_channel=scheme.endswith("per_channel"),
    )
    return dst


# -- comparing with onnxruntime -------------------------------------------------------------


def quantized_outputs(model: Any) -> list[tuple[str, str]]:
    """The quantized tensors of a model (``(name, node)`` of each output of a
    QuantizeLinear, QLinear* or QGemm node with a constant zero point) added as graph
    outputs, in place, so the intermediate integers can be compared."""
    from onnx import helper, numpy_helper

    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    zp_input = {"QuantizeLinear": 2, "QLinearConv": 7, "QLinearMatMul": 7, "QGemm": 8}
    zp_input["QLinearConcat"] = 1
    added = []
    known = {o.name for o in model.graph.output}
    for node in model.graph.node:
        op = node.op_type
        if not (op in zp_input or op.startswith("QLinear")):
            continue
        k = zp_input.get(op, len(node.input) - 1)
        if k >= len(node.input) or node.input[k] not in inits or node.output[0] in known:
            continue
        dtype = inits[node.input[k]].dtype
        elem = helper.np_dtype_to_tensor_dtype(dtype)
        model.graph.output.append(helper.make_tensor_value_info(node.output[0], elem, None))
        added.append((node.output[0], node.name))
        known.add(node.output[0])
    return added


def ort_run(model: Any, feeds: dict[str, np.ndarray], optimize: bool = False) -> list[np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    level = ort.GraphOptimizationLevel
    so.graph_optimization_level = level.ORT_ENABLE_ALL if optimize else level.ORT_DISABLE_ALL
    so.log_severity_level = 3
    data = model.SerializeToString()
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, feeds)


def compare(
    got: list[np.ndarray],
    want: list[np.ndarray],
    want_optimized: list[np.ndarray],
    names: list[str],
) -> list[str]:
    """What differs beyond the bounds: integer tensors equal on at least 99% of elements
    and one step off elsewhere; float outputs within 2e-2 of the largest magnitude, or
    within the distance between onnxruntime's outputs with and without optimizations."""
    problems = []
    for name, g, w, wo in zip(names, got, want, want_optimized, strict=True):
        if g.shape != w.shape or g.dtype != w.dtype:
            problems.append(f"{name}: got {g.dtype}{g.shape}, want {w.dtype}{w.shape}")
            continue
        if w.dtype.kind in "iu":
            d = np.abs(g.astype(np.int64) - w.astype(np.int64))
            equal = float(np.mean(d == 0)) if d.size else 1.0
            if equal < 0.99 or (d.size and d.max() > 1):
                problems.append(f"{name}: {equal:.2%} equal, largest step {d.max()}")
            continue
        d = float(np.max(np.abs(g.astype(np.float64) - w))) if w.size else 0.0
        own = float(np.max(np.abs(wo.astype(np.float64) - w))) if w.size else 0.0
        bound = max(2e-2 * float(np.max(np.abs(w))), own)
        if d > bound:
            problems.append(f"{name}: largest difference {d:.3g} above {bound:.3g}")
    return problems
