"""relaykit + oneDNN int8 regions against onnxruntime int8 (U8S8 QDQ), batch 1.

    python benchmarks/int8_dnnl.py                         # ResNet-18, 40 runs each
    python benchmarks/int8_dnnl.py --models resnet18,mobilenet_v2 --threads 2 --runs 60

The full-size model (torchvision's layout, random weights; tests/frontend/onnx/
quant_models.py) is exported to ONNX and quantized by onnxruntime's quantizer
(static QDQ, uint8 activations, int8 weights, per tensor, random calibration data).
In this one process, with the same input and thread count: relaykit + dnnl on the
int8 model (the whole network one int8 region), onnxruntime on the int8 model
(all graph optimisations, which turn QDQ into its int8 kernels), and relaykit +
dnnl on the float model. Runs are interleaved in bursts after a pause (as in
benchmarks/dnnl_vs_ort.py); medians and ratios are printed, with the largest
difference between relaykit's and onnxruntime's int8 outputs in output-scale steps.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _quant_models() -> Any:
    spec = importlib.util.spec_from_file_location(
        "rk_quant_models", ROOT / "tests" / "frontend" / "onnx" / "quant_models.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rk_quant_models"] = module
    spec.loader.exec_module(module)
    return module


def _relaykit(path: Path, feeds: dict[str, np.ndarray]) -> Callable[[], np.ndarray]:
    import onnx

    import relaykit as tvm
    from relaykit import relay
    from relaykit.backends.dnnl import partition_for_dnnl
    from relaykit.contrib import graph_executor

    mod, params = relay.frontend.from_onnx(onnx.load(str(path)))
    mod = partition_for_dnnl(mod, params)
    regions = [gv for gv in mod.get_global_vars() if gv.name_hint != "main"]
    print(f"  {path.name}: {len(regions)} dnnl region(s)")
    lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in feeds.items():
        m.set_input(k, v)

    def run() -> np.ndarray:
        m.run()
        return m.get_output(0).numpy()

    return run


def _ort(path: Path, feeds: dict[str, np.ndarray], threads: int) -> Callable[[], np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, feeds)[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet18")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--burst", type=int, default=5)
    ap.add_argument("--gap", type=float, default=0.2)
    args = ap.parse_args()
    os.environ.setdefault("RELAYKIT_NUM_THREADS", str(args.threads))
    qm = _quant_models()
    tmp = Path(tempfile.mkdtemp(prefix="rk_int8_"))
    for name in args.models.split(","):
        print(f"{name} (full size, batch 1, {args.threads} threads)")
        fp32 = tmp / f"{name}.onnx"
        int8 = tmp / f"{name}_u8s8.onnx"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            feeds = qm.export(name, fp32, full=True)
            qm.quantize(fp32, int8, "qdq_u8s8", feeds)
        engines = {
            "relaykit+dnnl int8": _relaykit(int8, feeds),
            "onnxruntime int8": _ort(int8, feeds, args.threads),
            "relaykit+dnnl fp32": _relaykit(fp32, feeds),
        }
        got, want = engines["relaykit+dnnl int8"](), engines["onnxruntime int8"]()
        times: dict[str, list[float]] = {k: [] for k in engines}
        order = list(engines)
        while min(len(t) for t in times.values()) < args.runs:
            for key in order:
                time.sleep(args.gap)
                engines[key]()
                for _ in range(args.burst):
                    t0 = time.perf_counter()
                    engines[key]()
                    times[key].append((time.perf_counter() - t0) * 1e3)
            order.reverse()
        med = {k: statistics.median(v) for k, v in times.items()}
        best = {k: min(v) for k, v in times.items()}
        for k in engines:
            print(f"  {k:20s} median {med[k]:7.2f} ms   best {best[k]:7.2f} ms")
        ours, ort_ = med["relaykit+dnnl int8"], med["onnxruntime int8"]
        f32 = med["relaykit+dnnl fp32"]
        best_ratio = best["relaykit+dnnl int8"] / best["onnxruntime int8"]
        print(
            f"  ratio relaykit int8 / onnxruntime int8: {ours / ort_:.2f} (best {best_ratio:.2f})"
        )
        print(f"  speed-up of relaykit int8 over relaykit fp32: {f32 / ours:.2f}x")
        steps = np.unique(np.abs(np.diff(np.unique(want))))
        step = float(steps[steps > 0].min()) if steps.size and np.any(steps > 0) else 1.0
        diff = np.abs(got.astype(np.float64) - want)
        print(
            f"  outputs: largest difference {diff.max() / step:.1f} steps, "
            f"{np.mean(diff < step / 2):.1%} equal"
        )


if __name__ == "__main__":
    main()
