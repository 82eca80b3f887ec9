"""CNNs (MobileNetV2, ResNet-18, VGG-11) on relaykit's host path (and relaykit + oneDNN)
against onnxruntime.

    python benchmarks/host_cnn.py                 # MobileNetV2, host vs onnxruntime
    python benchmarks/host_cnn.py --engines host,dnnl,ort --runs 20 --threads 2
    python benchmarks/host_cnn.py --models mobilenet_v2,resnet18,vgg11 --engines host,dnnl,ort
    python benchmarks/host_cnn.py --engines host,numpy,ort   # also without native kernels

MobileNetV2 (width 1.0, 224x224, batch 1, fp32, random weights, batch norm
with random statistics) is written in plain PyTorch and exported to ONNX
(opset 17) when torch is importable (``pip install 'relaykit[torch]'``), else
built with ``onnx.helper`` from the same layer list (Conv, BatchNormalization,
Clip for ReLU6, Add, GlobalAveragePool, Flatten, Gemm). It is not a model the
tests use. ResNet-18 and VGG-11 (torchvision's layer lists, 224x224, random
weights and batch norm statistics) are written in plain PyTorch too and need it:
without torch they are skipped with a message. Timing and checks as in
``transformers.py`` (see ``_bench.py``).

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
    return randomize_bn(MobileNetV2())


def randomize_bn(model):
    """Random batch norm statistics and affine parameters (else BN folds to ~identity)."""
    import torch
    from torch import nn

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.1)
    return model.eval()


def resnet18_model():
    """torchvision's ResNet-18 (basic blocks [2, 2, 2, 2]), random weights."""
    import torch
    from torch import nn

    class Basic(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class ResNet18(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                      nn.MaxPool2d(3, 2, 1)]  # fmt: skip
            cin = 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
                cin = cout
            self.features = nn.Sequential(*layers)
            self.fc = nn.Linear(512, 1000)

        def forward(self, x):
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))

    torch.manual_seed(0)
    return randomize_bn(ResNet18())


def vgg11_model():
    """torchvision's VGG-11 (configuration "A", no batch norm), random weights."""
    import torch
    from torch import nn

    class VGG11(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layers: list = []
            cin = 3
            for v in (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"):
                if v == "M":
                    layers.append(nn.MaxPool2d(2, 2))
                else:
                    layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU()]
                    cin = v
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Sequential(
                nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                nn.Linear(4096, 1000),
            )  # fmt: skip

        def forward(self, x):
            return self.classifier(torch.flatten(self.features(x), 1))

    torch.manual_seed(0)
    model = VGG11()
    with torch.no_grad():  # He-scaled weights keep activations O(1) through 11 layers
        for m in model.modules():
            if isinstance(m, nn.Conv2d | nn.Linear):
                fan = m.weight[0].numel()
                m.weight.normal_(0, (2.0 / fan) ** 0.5)
                m.bias.normal_(0, 0.01)
    return model.eval()


#: The models ``--models`` names: their display names and torch constructors.
MODELS = {
    "mobilenet_v2": ("MobileNetV2", lambda: torch_model()),
    "resnet18": ("ResNet-18", lambda: resnet18_model()),
    "vgg11": ("VGG-11", lambda: vgg11_model()),
}


def export_torch(x: np.ndarray, model_name: str = "mobilenet_v2") -> bytes:
    import torch

    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            MODELS[model_name][1](), (torch.from_numpy(x),), buf, input_names=["x"],
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


def bench_model(name: str, args: argparse.Namespace, threads: int) -> bool:
    """Build and time one model on the engines asked for; False when it cannot be built."""
    wanted = set(args.engines.split(","))
    x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
    how = "helper"
    if args.export != "helper":
        try:
            model = export_torch(x, name)
            how = "torch"
        except ImportError:
            if args.export == "torch":
                raise
    if how == "helper":
        if name != "mobilenet_v2":
            print(f"{name}: skipped, it needs torch (pip install 'relaykit[torch]')")
            return False
        model = export_helper(x)
    feeds = {"x": x}
    print(
        f"{MODELS[name][0]} ({how}), batch 1, fp32, {threads} threads, median of {args.runs} runs "
        f"in interleaved bursts of {args.burst}, {args.gap:g} s apart; ratio = engine / onnxruntime"
    )
    _bench.header()
    engines = [_bench.ort_engine(model, feeds, threads)]
    if "host" in wanted:
        engines.append(_bench.relaykit_engine(model, feeds, threads))
    if "numpy" in wanted:
        from relaykit.backends.host import native as host_native

        with host_native.disabled():  # executors made here bind NumPy kernels only
            engine = _bench.relaykit_engine(model, feeds, threads)
        engine.name = "relaykit numpy"
        engines.append(engine)
    if "dnnl" in wanted:
        engines.append(_bench.relaykit_engine(model, feeds, threads, dnnl=True))
    want = engines[0].run()
    errors = {e.name: _bench.rel_error(e.run(), want) for e in engines[1:]}
    _bench.time_engines(engines, args.runs, args.burst, args.gap)
    _bench.report(name, engines, errors)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engines", default="host,ort", help="host, numpy, dnnl, ort")
    parser.add_argument("--models", default="mobilenet_v2", help=", ".join(MODELS))
    parser.add_argument("--runs", type=int, default=20, help="timed runs per engine")
    parser.add_argument("--burst", type=int, default=5, help="timed runs per burst")
    parser.add_argument("--gap", type=float, default=0.3, help="pause before each burst (s)")
    parser.add_argument("--threads", type=int, default=None, help="threads (default: all)")
    parser.add_argument("--export", default="auto", choices=["auto", "torch", "helper"])
    args = parser.parse_args(argv)

    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    threads = _bench.num_threads(args.threads)
    for i, name in enumerate(names):
        if i:
            print()
        bench_model(name, args, threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
