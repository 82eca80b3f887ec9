"""Quantized ONNX models at full size: ResNet-18, MobileNetV2 (1x3x224x224) and a
BERT-base-like encoder (4 layers, 128 tokens), random weights, quantized by
onnxruntime's quantizer (QDQ U8S8 / S8S8, per channel, QOperator, dynamic).

    python benchmarks/onnx_quantized.py                          # every model and scheme
    python benchmarks/onnx_quantized.py --models resnet18 --schemes qop,qdq_u8s8 --no-time
    python benchmarks/onnx_quantized.py --small                  # the tests' small models

Per model and scheme it checks that relaykit (host, and with dnnl) matches onnxruntime
with its graph optimizations off on the outputs (2e-2 of the largest magnitude, or
onnxruntime's own distance with and without optimizations; the exit status says) and
reports how its quantized intermediate tensors compare (the small models of
tests/frontend/onnx/test_quantized_models.py must match on every one); then (unless
``--no-time``) it times onnxruntime, relaykit's host path and relaykit+dnnl side by
side in interleaved bursts (``_bench.py``) and prints the ratios to onnxruntime.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _bench

ROOT = Path(__file__).resolve().parents[1]


def load_qm() -> Any:
    path = ROOT / "tests" / "frontend" / "onnx" / "quant_models.py"
    spec = importlib.util.spec_from_file_location("relaykit_tests_qmodels", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["relaykit_tests_qmodels"] = module
    spec.loader.exec_module(module)
    return module


def check(qm: Any, path: Path, feeds: dict, threads: int, dnnl: bool) -> str:
    """A line on the model's outputs (within the bounds or not) and on its quantized
    intermediate tensors (how many are >= 99% equal and one step off elsewhere, the
    lowest share equal and the largest step: a flipped rounding early in the network
    moves later layers, so at full size these are a measure, the outputs the check)."""
    import numpy as np
    import onnx

    model = onnx.load(str(path))
    n_out = len(model.graph.output)
    qm.quantized_outputs(model)
    names = [o.name for o in model.graph.output]
    want, want_opt = qm.ort_run(model, feeds), qm.ort_run(model, feeds, optimize=True)
    engine = _bench.relaykit_engine(model.SerializeToString(), feeds, threads, dnnl=dnnl)
    got = engine.run()
    final = qm.compare(got[:n_out], want[:n_out], want_opt[:n_out], names[:n_out])
    norms = []  # the relative L2 error of each output, and onnxruntime's own (optimized)
    for g, w, wo in zip(got[:n_out], want[:n_out], want_opt[:n_out], strict=True):
        if w.dtype.kind == "f" and w.size:
            size = max(float(np.linalg.norm(w.astype(np.float64))), 1e-30)
            own = float(np.linalg.norm(wo.astype(np.float64) - w)) / size
            norms.append(f"{float(np.linalg.norm(g.astype(np.float64) - w)) / size:.1e}"
                         f" (ort {own:.1e})")  # fmt: skip
    shares, steps, strict = [], [], 0
    for g, w in zip(got[n_out:], want[n_out:], strict=True):
        d = np.abs(g.astype(np.int64) - w.astype(np.int64))
        shares.append(float(np.mean(d == 0)))
        steps.append(int(d.max()))
        strict += shares[-1] >= 0.99 and steps[-1] <= 1
    inner = ""
    if shares:
        inner = (
            f"; {strict}/{len(shares)} quantized tensors >= 99% equal and <= 1 step off, "
            f"lowest {min(shares):.2%} equal, largest step {max(steps)}"
        )
    rel = f"; relative L2 error {', '.join(norms)}" if norms else ""
    return ("outputs ok" if not final else "OUTPUTS DIFFER: " + "; ".join(final)) + rel + inner


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(("resnet18", "mobilenet_v2", "bert")))
    p.add_argument("--schemes", default="qdq_u8s8,qdq_s8s8,qdq_s8s8_per_channel,qop,dynamic")
    p.add_argument("--small", action="store_true", help="the small models of the tests")
    p.add_argument("--no-time", action="store_true", help="check only, no timing")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--burst", type=int, default=5)
    p.add_argument("--gap", type=float, default=0.2)
    args = p.parse_args()
    qm = load_qm()
    threads = _bench.num_threads(args.threads)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if not args.no_time:
            _bench.header()
        for name in args.models.split(","):
            feeds = qm.export(name, root / f"{name}.onnx", full=not args.small)
            for scheme in args.schemes.split(","):
                path = qm.quantize(
                    root / f"{name}.onnx", root / f"{name}_{scheme}.onnx", scheme, feeds
                )
                label = f"{name}/{scheme}"
                for dnnl in (False, True):
                    status = check(qm, path, feeds, threads, dnnl)
                    failed += status.startswith("OUTPUTS DIFFER")
                    where = "dnnl" if dnnl else "host"
                    print(f"check {label:<34}{where:<6}{status}", flush=True)
                if args.no_time:
                    continue
                data = path.read_bytes()
                engines = [
                    _bench.ort_engine(data, feeds, threads),
                    _bench.relaykit_engine(data, feeds, threads),
                    _bench.relaykit_engine(data, feeds, threads, dnnl=True),
                ]
                _bench.time_engines(engines, args.runs, args.burst, args.gap)
                _bench.report(label, engines, {})
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
