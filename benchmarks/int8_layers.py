"""Each int8 layer of a quantized model alone, given onnxruntime's own integers.

    python benchmarks/int8_layers.py                                  # every model
    python benchmarks/int8_layers.py --models resnet18 --schemes qdq_u8s8,qop

At full size a one-step rounding difference early in a network (onnxruntime's
reference multiplies dequantized floats in its own summation order; relaykit sums
integers exactly) moves later layers, so the share of a deep model's final integers
equal to onnxruntime's measures the spread of those flips more than the kernels. This
script measures the kernels: for every quantized tensor of the model (each output of a
QuantizeLinear, QLinear* or QGemm node, ``quant_models.quantized_outputs``) it cuts out
the sub-graph from the nearest quantized tensors (or graph inputs) upstream to it,
feeds it onnxruntime's reference values of those (optimizations off, the whole model
run once), builds it with relaykit (the host int8 path after
``FakeQuantizationToInteger``, and dnnl int8 regions, as ``benchmarks/int8.py``), and
compares the tensor with onnxruntime's.

Printed per model, scheme and engine: how many tensors are equal on at least 99% of
elements and at most one step off elsewhere, the share of all their elements that are
equal, the lowest share and largest step of one tensor, and the five worst tensors.
Models: those of ``benchmarks/int8.py`` (ResNet-18, MobileNetV2, a BERT-base-like
encoder, random weights, quantized by onnxruntime's quantizer).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _bench
import numpy as np
from int8 import relaykit_int8_engine
from onnx_quantized import load_qm


@dataclass
class Layer:
    """One quantized tensor and the sub-model that computes it from quantized inputs."""

    name: str
    op: str
    model: bytes
    inputs: list[str]


def layers(model: Any, quantized: list[str]) -> list[Layer]:
    """The sub-model of each quantized tensor: the nodes between it and the nearest
    quantized tensors or graph inputs upstream (those become the sub-model's inputs),
    with the initializers they read."""
    from onnx import helper

    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    producer = {out: i for i, node in enumerate(graph.node) for out in node.output}
    cuts = set(quantized) | {i.name for i in graph.input if i.name not in inits}
    found = []
    for name in quantized:
        nodes: set[int] = set()
        inputs: list[str] = []
        used: list[str] = []
        stack = [producer[name]]
        while stack:
            i = stack.pop()
            if i in nodes:
                continue
            nodes.add(i)
            for src in graph.node[i].input:
                if not src:
                    continue
                if src in inits:
                    if src not in used:
                        used.append(src)
                elif src in cuts and src != name:
                    if src not in inputs:
                        inputs.append(src)
                elif src in producer:
                    stack.append(producer[src])
        sub = helper.make_graph(
            [graph.node[i] for i in sorted(nodes)],
            f"layer_{name}",
            [helper.make_tensor_value_info(x, 0, None) for x in inputs],  # typed by feed
            [helper.make_tensor_value_info(name, 0, None)],
            [inits[x] for x in used],
        )
        op = graph.node[producer[name]].op_type
        found.append(Layer(name, op, sub.SerializeToString(), inputs))
    return found


def _typed(layer: Layer, model: Any, values: dict[str, np.ndarray]) -> bytes:
    """The layer's graph as a model, its inputs and output typed from the reference."""
    from onnx import GraphProto, helper

    graph = GraphProto()
    graph.ParseFromString(layer.model)
    for v in list(graph.input) + list(graph.output):
        arr = values[v.name]
        typed = helper.make_tensor_value_info(
            v.name, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape)
        )
        v.CopyFrom(typed)
    sub = helper.make_model(graph, opset_imports=list(model.opset_import))
    sub.ir_version = model.ir_version
    return sub.SerializeToString()


def measure(model: Any, feeds: dict[str, np.ndarray], dnnl: bool, threads: int) -> list[tuple]:
    """(tensor, op, share equal, largest step, elements) of each quantized tensor."""
    qm = load_qm()
    quantized = [name for name, _ in qm.quantized_outputs(model)]
    names = [o.name for o in model.graph.output]
    values = dict(zip(names, qm.ort_run(model, feeds), strict=True))
    values.update(feeds)
    rows = []
    for layer in layers(model, quantized):
        data = _typed(layer, model, values)
        sub_feeds = {x: values[x] for x in layer.inputs}
        engine = relaykit_int8_engine(data, sub_feeds, threads, dnnl, layer.name)
        got = engine.run()[0]
        want = values[layer.name]
        d = np.abs(got.astype(np.int64) - want.astype(np.int64))
        rows.append((layer.name, layer.op, float(np.mean(d == 0)), int(d.max()), d.size))
    return rows


def report(label: str, rows: list[tuple]) -> bool:
    """Print the summary line and the worst tensors; whether every tensor holds."""
    strict = [r for r in rows if r[2] >= 0.99 and r[3] <= 1]
    elements = sum(r[4] for r in rows)
    equal = sum(r[2] * r[4] for r in rows) / max(elements, 1)
    lowest = min((r[2] for r in rows), default=1.0)
    step = max((r[3] for r in rows), default=0)
    print(
        f"{label:<36}{len(strict):>4}/{len(rows):<4} tensors >= 99% equal and <= 1 step; "
        f"{equal:.4%} of elements equal; lowest {lowest:.2%}, largest step {step}",
        flush=True,
    )
    for name, op, share, d, _ in sorted(rows, key=lambda r: (r[2], -r[3]))[:5]:
        if share < 1.0:
            print(f"    {op:<22}{name[:48]:<50}{share:8.3%} equal, step {d}")
    return len(strict) == len(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="resnet18,mobilenet_v2,bert")
    p.add_argument("--schemes", default="qdq_u8s8,qdq_s8s8,qop")
    p.add_argument("--engines", default="host,dnnl")
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    import onnx

    qm = load_qm()
    threads = _bench.num_threads(args.threads)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in args.models.split(","):
            fp32 = root / f"{name}.onnx"
            feeds = qm.export(name, fp32, full=True)
            for scheme in args.schemes.split(","):
                path = qm.quantize(fp32, root / f"{name}_{scheme}.onnx", scheme, feeds)
                for engine in args.engines.split(","):
                    rows = measure(onnx.load(str(path)), feeds, engine == "dnnl", threads)
                    ok &= report(f"{name}/{scheme} {engine}", rows)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
