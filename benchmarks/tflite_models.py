"""relaykit against TensorFlow's TFLite interpreter on MobileNets made by the TFLite
converter (the tutorials' stand-ins, benchmarks/tutorials/standins_tflite.py: a float
MobileNetV1 and a full-integer quantized MobileNetV2 with uint8 input and output).

Engines, in this one process, on the same input: the TFLite interpreter (its default
kernels, XNNPACK included, with the same thread count), relaykit's host path
(``relay.build`` + graph executor; NHWC convolutions take the native kernels' NCHW
layout at build) and relaykit with oneDNN regions (``partition_for_dnnl``). Timing is in
interleaved bursts (``_bench.time_engines``); medians, best runs and CPU time are
compared with the interpreter's. Outputs are compared too: float as the relative error,
quantized as the share of equal elements and the largest difference in steps.

    python benchmarks/tflite_models.py                  # both models
    python benchmarks/tflite_models.py --models v2_quant --runs 40 --threads 1
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "tutorials"))

import _bench  # noqa: E402
import standins_tflite  # noqa: E402

_MODELS = {
    "v1_float": (standins_tflite._mobilenet_v1, "mobilenet_v1_1.0_224"),
    "v2_quant": (standins_tflite._mobilenet_v2_quant, "mobilenet_v2_1.0_224_quant"),
}


def _model_bytes(key: str, cache: str) -> bytes:
    import tarfile

    make, name = _MODELS[key]
    path = os.path.join(cache, f"{name}.tgz")
    if not os.path.exists(path):
        make(path)
    with tarfile.open(path) as tar:
        member = tar.extractfile(f"./{name}.tflite")
        assert member is not None
        return member.read()


def _tflite_engine(buf: bytes, x: np.ndarray, threads: int) -> _bench.Engine:
    import tensorflow as tf

    t = time.perf_counter()
    interp = tf.lite.Interpreter(model_content=buf, num_threads=threads)
    interp.allocate_tensors()
    index = interp.get_input_details()[0]["index"]
    out = interp.get_output_details()[0]["index"]
    build = time.perf_counter() - t

    def run() -> list[np.ndarray]:
        interp.set_tensor(index, x)
        interp.invoke()
        return [interp.get_tensor(out).copy()]

    return _bench.Engine("tflite", run, build)


def _relaykit_engine(buf: bytes, x: np.ndarray, threads: int, dnnl: bool) -> _bench.Engine:
    import relaykit as tvm
    from relaykit import relay
    from relaykit.contrib import graph_executor

    t = time.perf_counter()
    mod, params = relay.frontend.from_tflite(buf, {"input": x.shape}, {"input": str(x.dtype)})
    config: dict = {"relay.num_threads": threads}
    note = ""
    if dnnl:
        from relaykit.backends.dnnl import OPTIONS_KEY, partition_for_dnnl

        mod = partition_for_dnnl(mod, params)
        config[OPTIONS_KEY] = {"num_threads": threads}
        note = f"{sum(1 for g in mod.get_global_vars() if g.name_hint != 'main')} regions"
    with tvm.transform.PassContext(opt_level=3, config=config):
        lib = relay.build(mod, target="llvm", params=params)
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    build = time.perf_counter() - t

    def run() -> list[np.ndarray]:
        gmod.set_input("input", x)
        gmod.run()
        return [gmod.get_output(0).numpy()]

    return _bench.Engine("relaykit+dnnl" if dnnl else "relaykit host", run, build, note)


def _agreement(got: np.ndarray, want: np.ndarray) -> str:
    if want.dtype.kind == "f":
        scale = max(float(np.abs(want).max()), 1e-30)
        return f"rel err {float(np.abs(got - want).max()) / scale:.1e}"
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    return f"equal {(diff == 0).mean():.2%}, max {int(diff.max())} step(s)"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=list(_MODELS), choices=list(_MODELS))
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--burst", type=int, default=5)
    p.add_argument("--gap", type=float, default=0.2)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--no-dnnl", action="store_true")
    p.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "relaykit-tflite"))
    args = p.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    threads = _bench.num_threads(args.threads)
    print(f"threads: {threads}")
    print(f"{'model':<12}{'engine':<15}{'median ms':>10}{'ratio':>8}{'min ms':>9}{'ratio':>8}"
          f"{'cpu ms':>9}{'ratio':>8}{'build s':>9}  agreement")  # fmt: skip
    for key in args.models:
        buf = _model_bytes(key, args.cache)
        rng = np.random.default_rng(0)
        if key.endswith("quant"):
            x = rng.integers(0, 256, (1, 224, 224, 3)).astype(np.uint8)
        else:
            x = rng.uniform(-1, 1, (1, 224, 224, 3)).astype(np.float32)
        engines = [_tflite_engine(buf, x, threads), _relaykit_engine(buf, x, threads, False)]
        if not args.no_dnnl:
            engines.append(_relaykit_engine(buf, x, threads, True))
        want = engines[0].run()[0]
        agree = {e.name: _agreement(e.run()[0], want) for e in engines[1:]}
        _bench.time_engines(engines, args.runs, args.burst, args.gap)
        base = engines[0]
        for e in engines:
            print(
                f"{key:<12}{e.name:<15}{e.median_ms:>10.2f}{e.median_ms / base.median_ms:>7.2f}x"
                f"{e.min_ms:>9.2f}{e.min_ms / base.min_ms:>7.2f}x{e.cpu_ms:>9.2f}"
                f"{e.cpu_ms / base.cpu_ms:>7.2f}x{e.build_s:>9.2f}  {agree.get(e.name, '')}"
                f" {e.note}",
                flush=True,
            )


if __name__ == "__main__":
    main()
