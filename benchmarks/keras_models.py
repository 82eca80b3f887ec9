"""Keras models: Keras itself (TensorFlow backend) vs relaykit's ``from_keras`` build.

    python benchmarks/keras_models.py                         # MobileNetV2, ResNet50, 224x224
    python benchmarks/keras_models.py --models mobilenet_v2 --runs 10 --small

The models are ``keras.applications`` with random weights (``weights=None``), batch 1.
Per model it prints the import time of ``from_keras`` in each layout, then the
latency of

* Keras: ``model.predict_on_batch`` (its compiled predict function) and the eager call
  ``model(x, training=False)``;
* relaykit: ``relay.build`` of ``from_keras(model)`` in TVM's default ``NCHW`` (the
  layout relaykit's host kernels are fastest in) and in ``NHWC``;

with the ratio of each to ``predict_on_batch`` (median and best run; < 1 is faster than
Keras) and the largest error relative to Keras's output. All engines run in this one
process on the same input, timed in interleaved bursts after pauses (``_bench.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _bench

MODELS = ("mobilenet_v2", "resnet50")


def build_model(name: str, size: int) -> Any:
    import keras

    keras.utils.set_random_seed(0)
    shape = (size, size, 3)
    if name == "mobilenet_v2":
        return keras.applications.MobileNetV2(input_shape=shape, weights=None)
    if name == "resnet50":
        return keras.applications.ResNet50(input_shape=shape, weights=None)
    raise SystemExit(f"unknown model {name!r} (choose from {', '.join(MODELS)})")


def relaykit_engine(model: Any, x: np.ndarray, layout: str, threads: int) -> _bench.Engine:
    import relaykit as tvm
    from relaykit import relay
    from relaykit.contrib import graph_executor
    from relaykit.frontend.keras import from_keras

    feed = x.transpose(0, 3, 1, 2) if layout == "NCHW" else x
    t = time.perf_counter()
    mod, params = from_keras(model, layout=layout)
    imported = time.perf_counter() - t
    with tvm.transform.PassContext(opt_level=3, config={"relay.num_threads": threads}):
        lib = relay.build(mod, target="llvm", params=params)
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    build = time.perf_counter() - t

    def run() -> list[np.ndarray]:
        gmod.set_input(0, feed)
        gmod.run()
        return [gmod.get_output(0).numpy()]

    return _bench.Engine(f"relaykit {layout}", run, build, f"import {imported:.2f} s")


def keras_engines(model: Any, x: np.ndarray) -> list[_bench.Engine]:
    import keras

    t = time.perf_counter()
    model.predict_on_batch(x)
    build = time.perf_counter() - t

    def eager() -> list[np.ndarray]:
        return [np.asarray(keras.ops.convert_to_numpy(model(x, training=False)))]

    return [
        _bench.Engine("keras predict", lambda: [model.predict_on_batch(x)], build),
        _bench.Engine("keras eager", eager),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--burst", type=int, default=5)
    parser.add_argument("--gap", type=float, default=0.2)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--small", action="store_true", help="96x96 inputs instead of 224")
    args = parser.parse_args()
    threads = _bench.num_threads(args.threads)
    size = 96 if args.small else 224
    print(f"threads {threads}, batch 1, {size}x{size}x3, {args.runs} runs per engine")
    print(
        f"{'model':<14}{'engine':<16}{'median ms':>10}{'ratio':>8}{'min ms':>9}{'ratio':>8}"
        f"{'rel err':>10}{'build s':>9}"
    )
    for name in args.models.split(","):
        model = build_model(name, size)
        x = np.random.default_rng(1).standard_normal((1, size, size, 3)).astype("float32")
        engines = keras_engines(model, x)
        engines += [relaykit_engine(model, x, layout, threads) for layout in ("NCHW", "NHWC")]
        want = engines[0].run()
        errors = {}
        for e in engines[1:]:
            got = e.run()
            if e.name == "relaykit NCHW":
                got = [g.transpose(0, 2, 3, 1) if g.ndim == 4 else g for g in got]
            errors[e.name] = _bench.rel_error(got, want)
        _bench.time_engines(engines, args.runs, args.burst, args.gap)
        base = engines[0]
        for e in engines:
            err = errors.get(e.name)
            err_s = f"{err:10.1e}" if err is not None else f"{'-':>10}"
            ratio, best = e.median_ms / base.median_ms, e.min_ms / base.min_ms
            print(
                f"{name:<14}{e.name:<16}{e.median_ms:>10.2f}{ratio:>7.2f}x{e.min_ms:>9.2f}"
                f"{best:>7.2f}x{err_s}{e.build_s:>9.2f}  {e.note}",
                flush=True,
            )


if __name__ == "__main__":
    main()
