"""int8 depthwise convolutions in a region: MobileNetV2's expansion 1x1, depthwise 3x3
and projection 1x1 as oneDNN int8 convolutions, each layer checked against NumPy
(int64 accumulation, float64 requantization) from the integers the layer before wrote,
with oneDNN's first depthwise kernel and with the direct one the tuner may choose
(``impl`` hint, :func:`relaykit.backends.dnnl.compile.tune.int8_depthwise_build`)."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.backends.dnnl.compile.tune import DIRECT_DEPTHWISE, int8_depthwise_build
from relaykit.backends.dnnl.run.program import Node, Program
from relaykit.backends.dnnl.run.region import DnnlRegion

CIN, MID, COUT, HW = 8, 32, 16, 56  # 56x56: a layer size the tuner tries
X_SCALE, X_ZP = 0.05, 3
#: (output scale, output zero point, clip of the real values or None) of each layer
LAYERS = ((0.04, 0, (0.0, 6.0)), (0.03, 0, (0.0, 6.0)), (0.1, 128, None))


@pytest.fixture(autouse=True)
def _needs_dnnl(dnnl):
    """Skipped (with the reason) where oneDNN is missing, as every dnnl test."""


def _weights() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(int8 weight, weight scale per output channel, int32 bias) of the three layers."""
    rng = np.random.default_rng(5)
    shapes = ((MID, CIN, 1, 1), (MID, 1, 3, 3), (COUT, MID, 1, 1))
    return [
        (
            rng.integers(-60, 61, s).astype(np.int8),
            rng.uniform(0.01, 0.03, s[0]).astype(np.float32),
            rng.integers(-400, 400, s[0]).astype(np.int32),
        )
        for s in shapes
    ]


def _program(stride: int) -> Program:
    p = Program()
    x = p.add_input((1, CIN, HW, HW))
    p.dtypes[x] = "uint8"
    ho = (HW - 1) // stride + 1
    shapes = ((1, MID, HW, HW), (1, MID, ho, ho), (1, COUT, ho, ho))
    src, src_scale, src_zp = x, X_SCALE, X_ZP
    for k, ((w, ws, b), (scale, zp, clip)) in enumerate(zip(_weights(), LAYERS, strict=True)):
        out = p.new_tensor(shapes[k])
        p.dtypes[out] = "uint8"
        wscale = (ws.astype(np.float64) * src_scale).astype(np.float32)
        attrs = {
            "weight": p.add_constant(w.astype(np.float32)),
            "bias": p.add_constant((b * wscale.astype(np.float64)).astype(np.float32)),
            "strides": [stride if k == 1 else 1] * 2, "dilation": [1, 1],
            "pad": [1 if k == 1 else 0] * 4, "groups": MID if k == 1 else 1,
            "wscale": [float(s) for s in wscale], "dst_scale": scale,
        }  # fmt: skip
        if src_zp:
            attrs["src_zp"] = src_zp
        if zp:
            attrs["dst_zp"] = zp
        node = Node("qconv", [src], out, attrs)
        if clip is not None:
            node.post = [{"op": "clip", "alpha": clip[0], "beta": clip[1]}]
        p.nodes.append(node)
        p.outputs.append(out)  # every layer's integers, to check each on its own
        src, src_scale, src_zp = out, scale, zp
    p.layout = "nhwc"
    return p


def _layer(q: np.ndarray, k: int, stride: int) -> np.ndarray:
    """Layer ``k`` of NumPy on the uint8 ``q`` (its zero point pads it: real zero)."""
    w, ws, b = _weights()[k]
    in_scale, in_zp = (X_SCALE, X_ZP) if k == 0 else LAYERS[k - 1][:2]
    scale, zp, clip = LAYERS[k]
    x = q.astype(np.int64) - in_zp
    if k == 1:  # depthwise 3x3, padding 1
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        ho = (HW - 1) // stride + 1
        acc = np.zeros((1, MID, ho, ho), np.int64)
        for i in range(3):
            for j in range(3):
                patch = xp[:, :, i : i + stride * ho : stride, j : j + stride * ho : stride]
                acc += patch * w[None, :, 0, i, j, None, None].astype(np.int64)
    else:
        acc = np.einsum("nchw,oc->nohw", x, w[:, :, 0, 0].astype(np.int64))
    real = (acc + b[None, :, None, None]) * (ws.astype(np.float64) * in_scale)[None, :, None, None]
    if clip is not None:
        real = np.clip(real, *clip)
    return np.clip(np.rint(real / scale) + zp, 0, 255)


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_kernels_compute_what_numpy_does(stride):
    p = _program(stride)
    first = DnnlRegion.from_program(p, num_threads=2)
    direct = DnnlRegion.from_program(_with_hint(p), num_threads=2)
    if DIRECT_DEPTHWISE not in _dw_step(direct, p):
        pytest.skip(f"this oneDNN has no {DIRECT_DEPTHWISE} kernel for the layer")
    x = np.random.default_rng(stride).integers(0, 120, (1, CIN, HW, HW)).astype(np.uint8)
    got = [r(x) for r in (first, direct)]
    for outs in got:
        prev = x
        for k, out in enumerate(outs):
            want = _layer(prev, k, stride)
            d = np.abs(out.astype(np.int64) - want)
            assert d.max() <= 1 and np.mean(d == 0) >= 0.99, (k, d.max(), np.mean(d == 0))
            prev = out
    for a, b in zip(*got, strict=True):  # the two kernels round alike
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("direct_faster", [True, False])
def test_tuned_build_takes_the_kernel_measured_faster(monkeypatch, direct_faster):
    """The choice follows the per-step times (made up here: the machine's are noise)."""
    import relaykit.backends.dnnl.compile.tune as tune

    def times(region, inputs, kinds, rounds=0):
        direct = any(DIRECT_DEPTHWISE in s and "x3x3" in s for s in region.steps())
        ms = 1.0 if direct == direct_faster else 2.0
        return {("qconv", n): ms for n in (p.nodes[1].out,)}

    p = _program(1)
    base = DnnlRegion.from_program(p, num_threads=2)
    monkeypatch.setattr(tune, "_step_times", times)
    region = int8_depthwise_build(p, lambda q: DnnlRegion.from_program(q, num_threads=2), base)
    probe = DnnlRegion.from_program(_with_hint(p), num_threads=2)
    if DIRECT_DEPTHWISE not in _dw_step(probe, p):
        assert region is None  # no such kernel: nothing to choose
        pytest.skip(f"this oneDNN has no {DIRECT_DEPTHWISE} kernel for the layer")
    if not direct_faster:
        assert region is None
        return
    small = _program(1)
    for n in small.nodes[1:]:  # the depthwise layer made smaller than the tuner tries
        n.attrs["strides"] = [4, 4]
    small.shapes[small.nodes[1].out] = (1, MID, 14, 14)
    small.shapes[small.nodes[2].out] = (1, COUT, 14, 14)
    small.nodes[2].attrs["strides"] = [1, 1]
    build = lambda q: DnnlRegion.from_program(q, num_threads=2)  # noqa: E731
    assert int8_depthwise_build(small, build, build(small)) is None
    assert region is not None and DIRECT_DEPTHWISE in _dw_step(region, p)
    x = np.random.default_rng(0).integers(0, 120, (1, CIN, HW, HW)).astype(np.uint8)
    for a, b in zip(region(x), base(x), strict=True):
        np.testing.assert_array_equal(a, b)


def _with_hint(p: Program) -> Program:
    q = p.copy()
    q.nodes[1].attrs["impl"] = DIRECT_DEPTHWISE
    return q


def _dw_step(region: DnnlRegion, p: Program) -> str:
    (step,) = [s for s in region.steps() if s.startswith(f"qconv t{p.nodes[1].out} ")]
    return step


def _quant_models():
    import importlib.util
    import sys
    from pathlib import Path

    name = "relaykit_tests_quant_models"
    if name not in sys.modules:
        path = (
            Path(__file__).resolve().parent.parent.parent / "frontend" / "onnx" / "quant_models.py"
        )
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_inverted_residual_block_matches_onnxruntime(tmp_path):
    """MobileNetV2's block (1x1 expansion, depthwise 3x3, 1x1 projection, residual add)
    quantized by onnxruntime (QDQ U8S8): one region whose projection adds the residual
    as post-ops (no step of its own), its output within a step of onnxruntime's
    reference (optimizations off) and equal on at least 99% of elements."""
    torch = pytest.importorskip("torch", reason="the block is exported from torch")
    pytest.importorskip("onnxruntime", reason="onnxruntime quantizes the block")
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    import relaykit as tvm
    from relaykit import relay
    from relaykit.backends.dnnl import partition_for_dnnl
    from relaykit.contrib import graph_executor

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.expand = torch.nn.Conv2d(16, 64, 1)
            self.dw = torch.nn.Conv2d(64, 64, 3, padding=1, groups=64)
            self.project = torch.nn.Conv2d(64, 16, 1)

        def forward(self, x):
            y = torch.nn.functional.relu6(self.expand(x))
            y = torch.nn.functional.relu6(self.dw(y))
            return x + self.project(y)

    torch.manual_seed(0)
    x = torch.randn(1, 16, 28, 28)
    with torch.no_grad():
        torch.onnx.export(Block().eval(), (x,), str(tmp_path / "f.onnx"), opset_version=17,
                          input_names=["x"], dynamo=False)  # fmt: skip
    feeds = {"x": x.numpy()}
    qm = _quant_models()
    qm.quantize(tmp_path / "f.onnx", tmp_path / "q.onnx", "qdq_u8s8", feeds)
    proto = onnx.load(str(tmp_path / "q.onnx"))
    mod, params = relay.frontend.from_onnx(proto)
    part = partition_for_dnnl(mod, params)
    assert len([gv for gv in part.get_global_vars() if gv.name_hint != "main"]) == 1
    lib = relay.build(part, target="llvm")
    steps = [
        s for m in lib.lib.imported_modules if m.type_key == "dnnl"
        for r in m.regions.values() for s in r.steps()
    ]  # fmt: skip
    assert not any(s.startswith("qadd") for s in steps), steps
    assert sum(s.startswith("qconv") and "+binary_add" in s for s in steps) == 1, steps
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", feeds["x"])
    g.run()
    got = g.get_output(0).numpy()
    want = qm.ort_run(proto, feeds)[0]
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    last = next(n for n in reversed(proto.graph.node) if n.op_type == "DequantizeLinear")
    d = np.rint(np.abs(got.astype(np.float64) - want) / float(inits[last.input[1]]))
    assert d.max() <= 1 and np.mean(d == 0) >= 0.99, (d.max(), np.mean(d == 0))
