"""The commands take quantized models: a QDQ ONNX network (QuantizeLinear/DequantizeLinear
around a convolution with int8 weights, as onnxruntime's quantizer writes them) is
explained, partitioned and compiled with the same regions, runs on the host and with dnnl
to onnxruntime's result, is benchmarked, and the report shows each region's dtypes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from relaykit.cli import main

from .test_same_regions import DNNL, check_same

onnx = pytest.importorskip("onnx")


def build_qdq_net(path: Path) -> Path:
    """x float32[1,3,8,8] -> Q/DQ (uint8) -> Conv(int8 weights, per channel) + bias ->
    Q/DQ -> Relu -> Q/DQ -> GlobalAveragePool -> Flatten: ``y`` float32[1, 4]."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    w = rng.integers(-100, 100, (4, 3, 3, 3)).astype(np.int8)
    ws = (rng.uniform(0.002, 0.01, 4)).astype(np.float32)
    inits = [
        numpy_helper.from_array(np.float32(0.02), "xs"),
        numpy_helper.from_array(np.uint8(128), "xz"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(ws, "ws"),
        numpy_helper.from_array(np.zeros(4, np.int8), "wz"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32) * 0.1, "b"),
        numpy_helper.from_array(np.float32(0.05), "cs"),
        numpy_helper.from_array(np.uint8(100), "cz"),
        numpy_helper.from_array(np.float32(0.03), "rs"),
        numpy_helper.from_array(np.uint8(0), "rz"),
    ]
    q = helper.make_node
    nodes = [
        q("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        q("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        q("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
        q("Conv", ["xd", "wd", "b"], ["c"], pads=[1, 1, 1, 1]),
        q("QuantizeLinear", ["c", "cs", "cz"], ["cq"]),
        q("DequantizeLinear", ["cq", "cs", "cz"], ["cd"]),
        q("Relu", ["cd"], ["r"]),
        q("QuantizeLinear", ["r", "rs", "rz"], ["rq"]),
        q("DequantizeLinear", ["rq", "rs", "rz"], ["rd"]),
        q("GlobalAveragePool", ["rd"], ["g"]),
        q("Flatten", ["g"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture
def qdq_net(tmp_path: Path) -> Path:
    return build_qdq_net(tmp_path / "qdq.onnx")


def _ort(model: Path, x: np.ndarray) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize("target", ["host", pytest.param("dnnl", marks=DNNL), "ccompiler"])
def test_compile_and_run_match_onnxruntime(qdq_net, target, tmp_path, capsys):
    out = tmp_path / f"q_{target}.rkmod"
    assert main(["compile", str(qdq_net), "--target", target, "-o", str(out)]) == 0
    x = np.random.default_rng(0).uniform(-2, 2, (1, 3, 8, 8)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    res = tmp_path / "out.npz"
    assert main(["run", str(out), "--inputs", str(tmp_path / "in.npz"), "--outputs", str(res)]) == 0
    got = np.load(res)["y"]
    want = _ort(qdq_net, x)
    # the same quantized values: at most one step of the last quantizer (0.03) apart
    assert np.max(np.abs(got - want)) <= 0.03 + 1e-6


@pytest.mark.parametrize("flags", [["--target", "ccompiler"],
                                   pytest.param(["--target", "dnnl"], marks=DNNL)])  # fmt: skip
def test_explain_partition_and_compile_show_the_same_regions(qdq_net, flags, tmp_path, capsys):
    check_same(capsys, str(qdq_net), flags, tmp_path)


def test_explain_reports_the_qnn_operators_and_region_dtypes(qdq_net, capsys, tmp_path):
    import json

    assert main(["explain", str(qdq_net), "--target", "ccompiler", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    ops = {o["op"] for o in data["explain"]["ops"]}
    assert {"qnn.quantize", "qnn.dequantize", "nn.conv2d"} <= ops
    kept = [r for r in data["explain"]["regions"] if r["function"]]
    assert kept  # the float convolution's bias add and relu go to ccompiler
    assert all(r["dtypes"] == ["float32"] for r in kept)
    html = tmp_path / "r.html"
    assert main(["explain", str(qdq_net), "--target", "ccompiler", "--html", str(html)]) == 0
    assert "<th>dtypes</th>" in html.read_text()


def test_bench_times_a_quantized_model(qdq_net, capsys):
    argv = ["bench", str(qdq_net), "--target", "host", "--bursts", "1", "--runs", "2",
            "--pause", "0"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "onnxruntime" in out and "relaykit host" in out
