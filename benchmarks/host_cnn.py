"""MobileNetV2 on relaykit's host path (and relaykit + oneDNN) against onnxruntime.

    python benchmarks/host_cnn.py                 # host vs onnxruntime
    python benchmarks/host_cnn.py --engines host,dnnl,ort --runs 20 --threads 2
    python benchmarks/host_cnn.py --engines host,numpy,ort   # also without native kernels

MobileNetV2 (width 1.0, 224x224, batch 1, fp32, random weights, batch norm
with random statistics) is written in plain PyTorch and exported to ONNX
(opset 17) when torch is importable (``pip install 'relaykit[torch]'``), else
built with ``onnx.helper`` from the same layer list (Conv, BatchNormalization,
Clip for ReLU6, Add, GlobalAveragePool, Flatten, Gemm). It is not a model the
tests use. Timing and checks as in ``transformers.py`` (see ``_bench.py``).

``host`` is relaykit's host path as it runs by default (native kernels and fused
epilogues, see docs/host_kernels.md); ``numpy`` is the same path with the native
kernels off (``RELAYKIT_HOST_NATIVE=0``: NumPy kernels, no fusion).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _bench

#: MobileNetV2's inverted residual stages: (expansion t, channels c, repeats n, stride s).
STAGES = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
          (6, 160, 3, 2), (6, 320, 1, 1)]  # fmt: skip


def blocks() -> list[tuple[int, int, int, int]]:
    """Every inverted residual block as (in channels, out channels, stride, expansion)."""
    out, cin = [], 32
    for t, c, n, s in STAGES:
        for i in range(n):
            out.append((cin, c, s if i == 0 else 1, t))
            cin = c
    return out


def torch_model():
    import torch
    from torch import nn

    def conv_bn(cin: int, cout: int, k: int, stride: int, groups: int = 1, act: bool = True):
        layers = [
            nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
        ]
        if act:
            layers.append(nn.ReLU6())
        return layers

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, t: int) -> None:
            super().__init__()
            hid = cin * t
            layers = conv_bn(cin, hid, 1, 1) if t != 1 else []
            layers += conv_bn(hid, hid, 3, stride, groups=hid)
            layers += conv_bn(hid, cout, 1, 1, act=False)
            self.body = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.body(x) if self.residual else self.body(x)

    class MobileNetV2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            feats = conv_bn(3, 32, 3, 2)
            feats += [Block(*b) for b in blocks()]
            feats += conv_bn(320, 1280, 1, 1)
            self.features = nn.Sequential(*feats)
            self.classifier = nn.Linear(1280, 1000)

        def forward(self, x):
            x = self.features(x).mean((2, 3))
            return self.classifier(x)

    torch.manual_seed(0)
    model = MobileNetV2()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.1)
    return model.eval()


def export_torch(x: np.ndarray) -> bytes:
    import torch

    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            torch_model(), (torch.from_numpy(x),), buf, input_names=["x"],
            output_names=["out"], opset_version=17, dynamo=False,
        )  # fmt: skip
    return buf.getvalue()


def export_helper(x: np.ndarray) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes: list = []
    inits: list = []
    count = [0]

    def name(hint: str) -> str:
        count[0] += 1
        return f"{hint}_{count[0]}"

    def const(value: np.ndarray) -> str:
        n = name("c")
        inits.append(numpy_helper.from_array(value.astype(np.float32), n))
        return n

    def conv_bn(x: str, cin: int, cout: int, k: int, s: int, g: int = 1, act: bool = True) -> str:
        fan = cin // g * k * k
        w = const(rng.normal(0, (2.0 / fan) ** 0.5, (cout, cin // g, k, k)))
        y = name("conv")
        p = k // 2
        nodes.append(helper.make_node("Conv", [x, w], [y], kernel_shape=[k, k],
                                      strides=[s, s], pads=[p, p, p, p], group=g))  # fmt: skip
        bn = [const(rng.uniform(0.5, 1.5, cout)), const(rng.normal(0, 0.1, cout)),
              const(rng.normal(0, 0.1, cout)), const(rng.uniform(0.5, 1.5, cout))]  # fmt: skip
        z = name("bn")
        nodes.append(helper.make_node("BatchNormalization", [y, *bn], [z], epsilon=1e-5))
        if not act:
            return z
        r = name("relu6")
        nodes.append(helper.make_node("Clip", [z, const(np.array(0.0)), const(np.array(6.0))],
                                      [r]))  # fmt: skip
        return r

    h = conv_bn("x", 3, 32, 3, 2)
    for cin, cout, s, t in blocks():
        hid = cin * t
        y = conv_bn(h, cin, hid, 1, 1) if t != 1 else h
        y = conv_bn(y, hid, hid, 3, s, g=hid)
        y = conv_bn(y, hid, cout, 1, 1, act=False)
        if s == 1 and cin == cout:
            z = name("add")
            nodes.append(helper.make_node("Add", [h, y], [z]))
            y = z
        h = y
    h = conv_bn(h, 320, 1280, 1, 1)
    nodes.append(helper.make_node("GlobalAveragePool", [h], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"]))
    w, b = const(rng.normal(0, 0.03, (1000, 1280))), const(rng.normal(0, 0.01, 1000))
    nodes.append(helper.make_node("Gemm", ["flat", w, b], ["out"], transB=1))
    graph = helper.make_graph(
        nodes, "mobilenet_v2",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 1000])],
        initializer=inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engines", default="host,ort", help="host, numpy, dnnl, ort")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per engine")
    parser.add_argument("--burst", type=int, default=5, help="timed runs per burst")
    parser.add_argument("--gap", type=float, default=0.3, help="pause before each burst (s)")
    parser.add_argument("--threads", type=int, default=None, help="threads (default: all)")
    parser.add_argument("--export", default="auto", choices=["auto", "torch", "helper"])
    args = parser.parse_args(argv)

    threads = _bench.num_threads(args.threads)
    wanted = set(args.engines.split(","))
    x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
    how = "helper"
    if args.export != "helper":
        try:
            model = export_torch(x)
            how = "torch"
        except ImportError:
            if args.export == "torch":
                raise
    if how == "helper":
        model = export_helper(x)
    feeds = {"x": x}
    print(
        f"MobileNetV2 ({how}), batch 1, fp32, {threads} threads, median of {args.runs} runs in "
        f"interleaved bursts of {args.burst}, {args.gap:g} s apart; ratio = engine / onnxruntime"
    )
    _bench.header()
    engines = [_bench.ort_engine(model, feeds, threads)]
    if "host" in wanted:
        engines.append(_bench.relaykit_engine(model, feeds, threads))
    if "numpy" in wanted:
        from relaykit.backend import host_native

        with host_native.disabled():  # executors made here bind NumPy kernels only
            engine = _bench.relaykit_engine(model, feeds, threads)
        engine.name = "relaykit numpy"
        engines.append(engine)
    if "dnnl" in wanted:
        engines.append(_bench.relaykit_engine(model, feeds, threads, dnnl=True))
    want = engines[0].run()
    errors = {e.name: _bench.rel_error(e.run(), want) for e in engines[1:]}
    _bench.time_engines(engines, args.runs, args.burst, args.gap)
    _bench.report("mobilenet_v2", engines, errors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
