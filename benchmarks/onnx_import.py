"""Import time of ONNX models, and how import scales with model size.

1. The light ResNet-50 and DenseNet-121 shipped with onnx: median import time
   (from_onnx on a loaded ModelProto) over several runs.
2. Synthetic conv/batch-norm/relu/add networks of 250 ... 4,000 blocks: time per
   node at each size and the growth exponent between sizes (1.0 = linear).

Run: python benchmarks/onnx_import.py
"""

from __future__ import annotations

import math
import os
import statistics
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from relaykit.frontend import from_onnx

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def median_import(model: onnx.ModelProto, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        from_onnx(model)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def synthetic(blocks: int, channels: int = 4) -> onnx.ModelProto:
    """``blocks`` residual blocks of Conv -> BatchNormalization -> Relu -> Add."""
    rng = np.random.default_rng(0)
    inits = []
    nodes = []
    prev = "x"
    for b in range(blocks):
        w, s, bias, m, v = (f"w{b}", f"s{b}", f"b{b}", f"m{b}", f"v{b}")
        inits += [
            numpy_helper.from_array(rng.standard_normal((channels, channels, 1, 1), "float32"), w),
            numpy_helper.from_array(np.ones(channels, "float32"), s),
            numpy_helper.from_array(np.zeros(channels, "float32"), bias),
            numpy_helper.from_array(np.zeros(channels, "float32"), m),
            numpy_helper.from_array(np.ones(channels, "float32"), v),
        ]
        nodes += [
            helper.make_node("Conv", [prev, w], [f"c{b}"]),
            helper.make_node("BatchNormalization", [f"c{b}", s, bias, m, v], [f"n{b}"]),
            helper.make_node("Relu", [f"n{b}"], [f"r{b}"]),
            helper.make_node("Add", [f"r{b}", prev], [f"a{b}"]),
        ]
        prev = f"a{b}"
    graph = helper.make_graph(
        nodes,
        "synthetic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 8, 8])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, channels, 8, 8])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def main() -> None:
    print("light models (median of 5 imports):")
    for name in ("resnet50", "densenet121"):
        model = onnx.load(os.path.join(LIGHT, f"light_{name}.onnx"))
        t = median_import(model)
        n = len(model.graph.node)
        print(f"  {name:12s} {n:5d} nodes  {t * 1e3:8.1f} ms  ({t / n * 1e6:6.1f} us/node)")

    print("\nscaling (synthetic residual networks, 4 nodes per block):")
    sizes = [250, 500, 1000, 2000, 4000]
    times = []
    for blocks in sizes:
        model = synthetic(blocks)
        t = median_import(model, repeat=3)
        times.append(t)
        n = len(model.graph.node)
        print(f"  {n:6d} nodes  {t:7.3f} s  ({t / n * 1e6:6.1f} us/node)")
    exps = [
        math.log(times[i + 1] / times[i]) / math.log(sizes[i + 1] / sizes[i])
        for i in range(len(sizes) - 1)
    ]
    print("  growth exponents:", " ".join(f"{e:.2f}" for e in exps), "(1.0 = linear)")
    verdict = "linear" if max(exps) < 1.3 else "NOT linear"
    print(f"  import is {verdict} in the model's size")


if __name__ == "__main__":
    main()
