"""int8 against fp32: relaykit + dnnl, relaykit's host path and onnxruntime, each on
the fp32 model and on its int8 form, in one process.

    python benchmarks/int8.py                                   # every model
    python benchmarks/int8.py --models resnet18 --threads 2 --runs 20

Models (full size, random weights, none of them used by the tests): ResNet-18 and
MobileNetV2 (1x3x224x224) and a BERT-base-like encoder in plain PyTorch (4 layers, 128
tokens), exported to ONNX (opset 17) and quantized by onnxruntime's quantizer: static
U8S8 QDQ (uint8 activations, int8 weights, per tensor), and for the encoder also dynamic
(int8 weights, activations quantized at run time); helpers in
tests/frontend/onnx/quant_models.py.

relaykit's int8 builds run ``FakeQuantizationToInteger`` on the imported QDQ graph (the
QDQ pairs around each float operator become ``qnn.conv2d``, ``qnn.dense``,
``qnn.requantize``...), so the host path runs the native integer kernels
(``relaykit.backends.host.qnn``); the dnnl engine partitions the imported graph as it is.

Timing: interleaved bursts with a pause before each (``_bench.py``), medians, the ratio
of each engine to onnxruntime int8 and of each int8 engine to its own fp32. Accuracy:
the largest error of each int8 engine's outputs relative to the fp32 model's (onnxruntime
fp32, relative to the output's largest magnitude), and the share of output elements
equal to onnxruntime int8's within 1e-5 of the output's scale.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _bench
import numpy as np
from onnx_quantized import load_qm


def relaykit_int8_engine(
    model_bytes: bytes, feeds: dict[str, np.ndarray], threads: int, dnnl: bool, label: str
) -> _bench.Engine:
    """relaykit on a quantized model: FakeQuantizationToInteger, then the host path (or
    dnnl regions on the imported graph)."""
    import onnx

    import relaykit as tvm
    from relaykit import relay
    from relaykit.contrib import graph_executor
    from relaykit.frontend import from_onnx

    t = time.perf_counter()
    mod, params = from_onnx(
        onnx.load_from_string(model_bytes), shape={k: v.shape for k, v in feeds.items()}
    )
    config: dict[str, Any] = {"relay.num_threads": threads}
    note = ""
    if dnnl:
        from relaykit.backends.dnnl import OPTIONS_KEY, partition_for_dnnl

        mod = partition_for_dnnl(mod, params)
        config[OPTIONS_KEY] = {"num_threads": threads}
        note = f"{sum(1 for gv in mod.get_global_vars() if gv.name_hint != 'main')} regions"
    else:
        mod = relay.transform.InferType()(mod)
        mod = relay.transform.FakeQuantizationToInteger()(mod)
    with tvm.transform.PassContext(opt_level=3, config=config):
        lib = relay.build(mod, target="llvm", params=params)
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    if not dnnl:
        qnn = sum(1 for n in lib.plan.nodes if n.kind == "op" and n.name.startswith("qnn."))
        fused = sum(1 for g in (lib.plan.fusion or {}).values() if "qnn.requantize" in g.names)
        note = f"{qnn} qnn ops, {fused} fused int8 products"
    build = time.perf_counter() - t
    n_out = gmod.get_num_outputs()

    def run() -> list[np.ndarray]:
        for k, v in feeds.items():
            gmod.set_input(k, v)
        gmod.run()
        return [gmod.get_output(i).numpy() for i in range(n_out)]

    return _bench.Engine(label, run, build, note)


def _named(engine: _bench.Engine, name: str) -> _bench.Engine:
    engine.name = name
    return engine


def equal_share(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """Share of elements within 1e-5 of each output's largest magnitude."""
    same = total = 0
    for g, w in zip(got, want, strict=True):
        g64, w64 = np.asarray(g, np.float64), np.asarray(w, np.float64)
        tol = 1e-5 * max(float(np.abs(w64).max()), 1e-30)
        same += int(np.sum(np.abs(g64 - w64) <= tol))
        total += w64.size
    return same / max(total, 1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="resnet18,mobilenet_v2,bert")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--burst", type=int, default=5)
    p.add_argument("--gap", type=float, default=0.2)
    p.add_argument("--no-dnnl", action="store_true", help="leave out the relaykit + dnnl engines")
    p.add_argument(
        "--schemes", default="qdq_u8s8,dynamic", help="quantizations (dynamic: the encoder only)"
    )
    args = p.parse_args()
    qm = load_qm()
    threads = _bench.num_threads(args.threads)
    print(f"threads {threads}; ratios: to onnxruntime int8 (ort8) and to the engine's own fp32")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in args.models.split(","):
            fp32 = root / f"{name}.onnx"
            feeds = qm.export(name, fp32, full=True)
            schemes = [x for x in args.schemes.split(",") if x != "dynamic" or name == "bert"]
            for scheme in schemes:
                qpath = qm.quantize(fp32, root / f"{name}_{scheme}.onnx", scheme, feeds)
                _run_model(f"{name}/{scheme}", fp32.read_bytes(), qpath.read_bytes(), feeds,
                           threads, args)  # fmt: skip


def _run_model(
    label: str, f32: bytes, i8: bytes, feeds: dict[str, np.ndarray], threads: int, args: Any
) -> None:
    pairs: list[tuple[_bench.Engine, _bench.Engine]] = []
    pairs.append((_named(_bench.ort_engine(f32, feeds, threads), "ort fp32"),
                  _named(_bench.ort_engine(i8, feeds, threads), "ort int8")))  # fmt: skip
    pairs.append((_named(_bench.relaykit_engine(f32, feeds, threads), "host fp32"),
                  relaykit_int8_engine(i8, feeds, threads, False, "host int8")))  # fmt: skip
    if not args.no_dnnl:
        pairs.append((_named(_bench.relaykit_engine(f32, feeds, threads, dnnl=True), "dnnl fp32"),
                      relaykit_int8_engine(i8, feeds, threads, True, "dnnl int8")))  # fmt: skip
    engines = [e for pair in pairs for e in pair]
    want32 = pairs[0][0].run()
    want8 = pairs[0][1].run()
    _bench.time_engines(engines, args.runs, args.burst, args.gap)
    ort8 = pairs[0][1].median_ms
    print(f"\n{label}")
    print(f"{'engine':<11}{'median ms':>10}{'min ms':>9}{'/ ort8':>8}{'/ fp32':>8}"
          f"{'err vs fp32':>13}{'= ort8':>9}{'build s':>9}  note")  # fmt: skip
    for f, q in pairs:
        for e, base in ((f, None), (q, f)):
            got = e.run()
            err = _bench.rel_error(got, want32)
            share = equal_share(got, want8)
            own = f"{e.median_ms / base.median_ms:>7.2f}x" if base else f"{'':>8}"
            line = f"{e.name:<11}{e.median_ms:>10.2f}{e.min_ms:>9.2f}{e.median_ms / ort8:>7.2f}x"
            line += f"{own}{err:>13.1e}{share:>8.1%}{e.build_s:>9.2f}  {e.note}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
