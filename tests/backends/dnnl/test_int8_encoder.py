"""int8 encoders in dnnl regions: dynamic quantization (scales computed at run time),
int8 batched matmuls, and the quantize / dequantize steps folded into layer norm,
softmax and a dense's bias add.

References: NumPy int64 / float64 written here, and onnxruntime for the quantized ONNX
encoder (its integers equal on at least 99% of elements and one step off elsewhere)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends.dnnl import partition_for_dnnl
from relaykit.contrib import graph_executor
from relaykit.ir.expr import Call
from relaykit.ir.op import Op

HERE = Path(__file__).resolve().parent


def _c(value, dtype):
    return relay.const(np.asarray(value, dtype=dtype))


def _steps(lib) -> list[str]:
    mods = [m for m in lib.lib.imported_modules if m.type_key == "dnnl"]
    return [s for m in mods for r in m.regions.values() for s in r.steps()]


def _run(lib, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in feeds.items():
        g.set_input(k, v)
    g.run()
    return [g.get_output(i).numpy() for i in range(g.get_num_outputs())]


def _host_ops(mod) -> set[str]:
    names: set[str] = set()

    def visit(e) -> None:
        if isinstance(e, Call) and isinstance(e.op, Op):
            names.add(e.op.name)

    relay.analysis.post_order_visit(mod["main"], visit)
    return names


# -- dynamic quantization ------------------------------------------------------------------


def _dynamic_dense_model(units: int, depth: int, per_channel: bool):
    """DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(scale * w_scale) -> Add(bias),
    twice on one quantized tensor (as an encoder's query and key), written with onnx."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    w = [rng.integers(-127, 128, (depth, units)).astype(np.int8) for _ in range(2)]
    ws = [
        rng.uniform(0.001, 0.003, units if per_channel else 1).astype(np.float32)
        for _ in range(2)
    ]  # fmt: skip
    bias = [rng.standard_normal(units).astype(np.float32) for _ in range(2)]
    inits = []
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"])]
    outs = []
    for k in range(2):
        scale = ws[k].reshape(-1) if per_channel else ws[k].reshape(())
        inits += [
            numpy_helper.from_array(w[k], f"w{k}"),
            numpy_helper.from_array(np.zeros((), np.int8), f"wz{k}"),
            numpy_helper.from_array(scale, f"ws{k}"),
            numpy_helper.from_array(bias[k], f"b{k}"),
        ]
        nodes += [
            helper.make_node("MatMulInteger", ["q", f"w{k}", "z", f"wz{k}"], [f"acc{k}"]),
            helper.make_node("Cast", [f"acc{k}"], [f"f{k}"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["s", f"ws{k}"], [f"sc{k}"]),
            helper.make_node("Mul", [f"f{k}", f"sc{k}"], [f"m{k}"]),
            helper.make_node("Add", [f"b{k}", f"m{k}"], [f"y{k}"]),
        ]
        outs.append(helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None))
    graph = helper.make_graph(
        nodes, "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, depth])],
        outs, inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model, w, ws, bias


def _numpy_dynamic_dense(x, w, ws, bias):
    """ONNX's definition in float64 / int64: the range with 0, scale, zero point rounded
    half to even, the quantized tensor, the integer product, scaled, plus the bias."""
    x32 = x.astype(np.float32)
    lo, hi = min(float(x32.min()), 0.0), max(float(x32.max()), 0.0)
    scale = np.float32((np.float32(hi) - np.float32(lo)) / np.float32(255))
    safe = scale if scale != 0 else np.float32(1)
    zp = int(np.clip(np.rint(np.float32(0) - np.float32(lo) / safe), 0, 255))
    q = np.clip(np.rint(x32 / safe) + zp, 0, 255).astype(np.int64)
    acc = np.matmul(q - zp, w.astype(np.int64))
    return acc.astype(np.float64) * (float(scale) * ws.astype(np.float64)) + bias


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("kind", ["normal", "negative", "zeros"])
def test_dynamic_quantization_runs_in_one_region_as_numpy_defines_it(per_channel, kind):
    model, w, ws, bias = _dynamic_dense_model(units=24, depth=40, per_channel=per_channel)
    rng = np.random.default_rng(5)
    x = {
        "normal": rng.standard_normal((2, 6, 40)) * 2,
        "negative": -np.abs(rng.standard_normal((2, 6, 40))) - 0.5,  # zero point 255
        "zeros": np.zeros((2, 6, 40)),  # an empty range: scale 1, all zeros
    }[kind].astype(np.float32)
    mod, params = relay.frontend.from_onnx(model)
    part = partition_for_dnnl(mod, params)
    regions = [gv for gv in part.get_global_vars() if gv.name_hint != "main"]
    assert len(regions) == 1
    # the range, the parameters and the integer products all run in the region
    assert not _host_ops(part) & {"max", "min", "qnn.quantize", "qnn.dense", "floor"}
    lib = relay.build(part, target="llvm")
    steps = _steps(lib)
    assert sum(s.startswith("dynparams") for s in steps) == 1  # one quantization, shared
    assert sum(s.startswith("qdense") for s in steps) == 2
    got = _run(lib, {"x": x})
    for k in range(2):
        want = _numpy_dynamic_dense(x, w[k], ws[k], bias[k])
        np.testing.assert_allclose(got[k], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_dynamic_quantization_read_elsewhere_stays_on_the_host():
    """A quantization whose scale is also read by something other than a grouped dense
    is left as the importer wrote it (the host computes it), and still runs."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = np.arange(-8, 8, dtype=np.int8).reshape(4, 4)
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
        helper.make_node("MatMulInteger", ["q", "w", "z"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes, "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    mod, params = relay.frontend.from_onnx(model)
    part = partition_for_dnnl(mod, params)
    assert "max" in _host_ops(part)
    x = np.linspace(-1, 2, 12, dtype=np.float32).reshape(3, 4)
    got = _run(relay.build(part, target="llvm"), {"x": x})
    scale = np.float32(3) / np.float32(255)
    zp = int(np.rint(np.float32(1) / scale))
    q = np.clip(np.rint(x / scale) + zp, 0, 255).astype(np.int64)
    np.testing.assert_array_equal(got[0], ((q - zp) @ w.astype(np.int64)).astype(np.float32))
    np.testing.assert_allclose(got[1], scale, rtol=1e-7)


# -- int8 batched matmul -------------------------------------------------------------------


@pytest.mark.parametrize(("a_dtype", "b_dtype", "transpose_b"),
                         [("uint8", "uint8", False), ("uint8", "uint8", True),
                          ("int8", "int8", True), ("uint8", "int8", False)])  # fmt: skip
def test_qnn_batch_matmul_is_an_int8_matmul(a_dtype, b_dtype, transpose_b):
    rng = np.random.default_rng(7)
    lo = {"uint8": 0, "int8": -128}
    za, zb = (130, 117) if a_dtype == "uint8" else (3, -5)
    if b_dtype != a_dtype:
        zb = 0
    a = rng.integers(lo[a_dtype], lo[a_dtype] + 256, (3, 5, 70)).astype(a_dtype)
    b_shape = (3, 9, 70) if transpose_b else (3, 70, 9)
    b = rng.integers(lo[b_dtype], lo[b_dtype] + 256, b_shape).astype(b_dtype)
    va = relay.var("a", shape=a.shape, dtype=a_dtype)
    vb = relay.var("b", shape=b.shape, dtype=b_dtype)
    acc = relay.qnn.op.batch_matmul(
        va, vb, _c(za, "int32"), _c(zb, "int32"), _c(0.02, "float32"), _c(0.03, "float32"),
        transpose_b=transpose_b,
    )  # fmt: skip
    acc = relay.reshape(acc, (1, 3, 5, 9))
    y = relay.qnn.op.requantize(
        acc, _c(0.02 * 0.03, "float32"), _c(0, "int32"), _c(2.5, "float32"), _c(128, "int32"),
        out_dtype="uint8",
    )  # fmt: skip
    mod = tvm.IRModule.from_expr(relay.Function([va, vb], y))
    lib = relay.build(partition_for_dnnl(mod), target="llvm")
    steps = _steps(lib)
    assert sum(s.startswith("qmatmul") for s in steps) == 1
    assert not any(s.startswith("matmul") for s in steps)  # no float matmul
    # the requantize is the matmul's output scale: no reorder after it
    assert sum(s.startswith("qreorder") for s in steps) <= (1 if b_dtype == "uint8" else 0)
    got = _run(lib, {"a": a, "b": b})[0]
    bb = b.astype(np.int64) - zb
    prod = np.matmul(a.astype(np.int64) - za, bb.transpose(0, 2, 1) if transpose_b else bb)
    real = prod.astype(np.float64) * np.float64(np.float32(0.02 * 0.03))
    want = np.clip(np.rint(real / 2.5) + 128, 0, 255).reshape(1, 3, 5, 9)
    d = np.abs(got.astype(np.int64) - want)
    assert d.max() <= 1 and np.mean(d == 0) >= 0.99, (d.max(), np.mean(d == 0))


# -- the QDQ encoder -----------------------------------------------------------------------


def _quant_models():
    name = "relaykit_tests_quant_models"
    if name not in sys.modules:
        path = HERE.parent.parent / "frontend" / "onnx" / "quant_models.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    pytest.importorskip("torch", reason="the encoder is exported from torch")
    pytest.importorskip("onnxruntime", reason="onnxruntime quantizes the encoder")
    pytest.importorskip("onnx")
    qm = _quant_models()
    tmp = tmp_path_factory.mktemp("encoder")
    feeds = qm.export("bert", tmp / "f.onnx")
    return qm, tmp, feeds


def test_qdq_encoder_folds_quantization_into_its_primitives(encoder):
    import onnx

    qm, tmp, feeds = encoder
    qm.quantize(tmp / "f.onnx", tmp / "q.onnx", "qdq_u8s8", feeds)
    model = onnx.load(str(tmp / "q.onnx"))
    names = [o.name for o in model.graph.output]
    added = qm.quantized_outputs(model)  # every quantized intermediate compared too
    mod, params = relay.frontend.from_onnx(model, {k: v.shape for k, v in feeds.items()})
    lib = relay.build(partition_for_dnnl(mod, params), target="llvm")
    got = _run(lib, feeds)
    names += [n for n, _ in added if n not in names]
    want = qm.ort_run(model, feeds)
    problems = qm.compare(got, want, qm.ort_run(model, feeds, optimize=True), names)
    assert not problems, "; ".join(problems[:5])
    # the integers must be computed, not merely passed through: with every quantized
    # tensor an output the folds stand back, so build once more without the extra outputs
    plain = onnx.load(str(tmp / "q.onnx"))
    mod, params = relay.frontend.from_onnx(plain, {k: v.shape for k, v in feeds.items()})
    lib = relay.build(partition_for_dnnl(mod, params), target="llvm")
    steps = _steps(lib)
    assert sum(s.startswith("qmatmul") for s in steps) == 4  # QK^T and PV of 2 layers
    assert not any(s.startswith("matmul") for s in steps)
    softmax = [s for s in steps if s.startswith("softmax")]
    assert softmax and all("-> int8" in s for s in softmax)
    erf = [s for s in steps if s.startswith("erf")]  # GELU's erf quantizes its result
    assert erf and all("-> int8" in s for s in erf)
    # P V is written heads-interleaved: the transpose before the output dense is a view
    assert not any(s.startswith("reorder") for s in steps)
    # bias adds are the denses' post-ops; layer norms read and write integers
    dense_bias = [s for s in steps if s.startswith("qdense") and "binary_add" in s]
    assert len(dense_bias) >= 12
    # the residual adds after the attention output and FFN denses are their post-ops too
    assert sum(s.startswith("qadd") for s in steps) <= 6
    want_plain = qm.ort_run(plain, feeds)
    out = _run(lib, feeds)
    problems = qm.compare(out, want_plain, qm.ort_run(plain, feeds, optimize=True),
                          [o.name for o in plain.graph.output])  # fmt: skip
    assert not problems, "; ".join(problems[:5])


def test_dynamic_encoder_is_one_region_but_its_gathers(encoder):
    import onnx

    qm, tmp, feeds = encoder
    qm.quantize(tmp / "f.onnx", tmp / "d.onnx", "dynamic", feeds)
    model = onnx.load(str(tmp / "d.onnx"))
    mod, params = relay.frontend.from_onnx(model, {k: v.shape for k, v in feeds.items()})
    part = partition_for_dnnl(mod, params)
    host = _host_ops(part)
    assert not host & {"qnn.dense", "qnn.quantize", "max", "min", "nn.layer_norm", "nn.softmax"}
    lib = relay.build(part, target="llvm")
    steps = _steps(lib)
    assert sum(s.startswith("qdense") for s in steps) == 13  # every MatMulInteger
    assert sum(s.startswith("dynparams") for s in steps) == 9  # every DynamicQuantizeLinear
    assert not any(s.startswith("reorder") for s in steps)
    # 1/sqrt(d) joined the query and key denses' scales: only the mask's arithmetic
    # (1, 1, 1, tokens) is left as linear steps
    assert all(s.split()[2].startswith("1x1x1x") for s in steps if s.startswith("linear"))
    got = _run(lib, feeds)
    want = qm.ort_run(model, feeds)
    for g, w in zip(got, want, strict=True):
        assert float(np.abs(g - w).max()) <= 1e-4 * float(np.abs(w).max())


def test_exported_dynamic_and_int8_matmul_regions_load_and_run_alike(tmp_path):
    """The new nodes (dynparams, dynquant, qdense with run-time parameters, qmatmul)
    travel in an exported module and load with ``allow_native=False``."""
    model, *_ = _dynamic_dense_model(units=8, depth=16, per_channel=True)
    mod, params = relay.frontend.from_onnx(model)
    lib = relay.build(partition_for_dnnl(mod, params), target="llvm")
    path = str(tmp_path / "dyn.rk")
    lib.export_library(path)
    x = np.random.default_rng(11).standard_normal((2, 6, 16)).astype(np.float32)
    loaded = tvm.runtime.load_module(path, allow_native=False)
    for got, want in zip(_run(loaded, {"x": x}), _run(lib, {"x": x}), strict=True):
        np.testing.assert_array_equal(got, want)
