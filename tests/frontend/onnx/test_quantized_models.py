"""ResNet-18, MobileNetV2 and a BERT-like encoder quantized by onnxruntime's quantizer
(QDQ U8S8 / S8S8, per tensor and per channel, QOperator, dynamic) import to QNN
operators, build for the host and with dnnl, and match onnxruntime (optimizations off):
every quantized intermediate tensor equal on at least 99% of elements and one step off
elsewhere, float outputs within 2e-2 (quant_models.compare)."""

from __future__ import annotations

from collections import Counter

import pytest

onnx = pytest.importorskip("onnx")

from relaykit import relay  # noqa: E402
from relaykit.ir.expr import Call  # noqa: E402
from relaykit.ir.op import Op  # noqa: E402

CASES = [
    (m, s)
    for m in ("resnet18", "mobilenet_v2", "bert")
    for s in ("qdq_u8s8", "qdq_s8s8", "qdq_s8s8_per_channel", "qop", "qop_per_channel", "dynamic")
]


def _op_counts(mod) -> Counter:
    counts: Counter = Counter()

    def visit(e) -> None:
        if isinstance(e, Call) and isinstance(e.op, Op):
            counts[e.op.name] += 1

    relay.analysis.post_order_visit(mod["main"], visit)
    return counts


def _onnx_counts(model) -> Counter:
    return Counter(n.op_type for n in model.graph.node)


def _expected_qnn(model) -> dict[str, int]:
    """The QNN operators the model's quantized nodes must become (at least this many)."""
    n = _onnx_counts(model)
    want = {
        "qnn.quantize": n["QuantizeLinear"],
        "qnn.conv2d": n["QLinearConv"] + n["ConvInteger"],
        "qnn.requantize": n["QLinearConv"] + n["QLinearMatMul"] + n["QGemm"],
    }
    want["qnn.dense"] = n["QGemm"]  # QLinearMatMul / MatMulInteger: dense or batch_matmul
    # Constant DequantizeLinear nodes stay qnn.dequantize (QNN calls are not folded).
    want["qnn.dequantize"] = n["DequantizeLinear"]
    return {k: v for k, v in want.items() if v}


@pytest.mark.parametrize(("name", "scheme"), CASES)
def test_quantized_model_matches_onnxruntime(
    name, scheme, quantized_model, qm, relay_build_run, dnnl_available
):
    path, feeds = quantized_model(name, scheme)
    model = onnx.load(str(path))
    added = qm.quantized_outputs(model)
    if scheme != "dynamic":
        assert len(added) >= 10, "the intermediate integer tensors are compared too"
    names = [o.name for o in model.graph.output]
    want = qm.ort_run(model, feeds)
    want_opt = qm.ort_run(model, feeds, optimize=True)

    mod, params = relay.frontend.from_onnx(model, {k: v.shape for k, v in feeds.items()})
    counts = _op_counts(mod)
    for qop, n in _expected_qnn(model).items():
        assert counts[qop] >= n, f"{qop}: {counts[qop]} calls, expected at least {n}"
    mm = _onnx_counts(model)["QLinearMatMul"] + _onnx_counts(model)["MatMulInteger"]
    assert counts["qnn.dense"] + counts["qnn.batch_matmul"] >= mm + _onnx_counts(model)["QGemm"]
    # no float arithmetic stands in for quantization: ONNX's rounding chain (one floor)
    # is left only where DynamicQuantizeLinear rounds its computed zero point
    assert counts["floor"] == _onnx_counts(model)["DynamicQuantizeLinear"]

    problems = qm.compare(relay_build_run(mod, params, feeds), want, want_opt, names)
    assert not problems, "host: " + "; ".join(problems[:5])

    if not dnnl_available:
        pytest.skip("oneDNN is not installed: the dnnl half of the check is skipped")
    from relaykit.relay.op.contrib.dnnl import partition_for_dnnl

    got = relay_build_run(partition_for_dnnl(mod, params), params, feeds)
    problems = qm.compare(got, want, want_opt, names)
    assert not problems, "dnnl: " + "; ".join(problems[:5])
