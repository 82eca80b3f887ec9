"""Executors in parallel threads: wrong outputs per backend (should be 0), and throughput.

For each backend (host, ccompiler, jsonref, dnnl) and two models (a small CNN
with host operators between backend regions, and a chain of elementwise
operators on 64k floats, one long region of intermediates), it creates 8
executors from one build and runs 8 threads x 100 runs, in three ways:

- ``own``: thread t uses executor t;
- ``mixed``: at run r thread t uses executor (t + r) % 8, so every executor is
  used by several threads at once;
- ``shared``: all threads use executor 0.

Every output is compared with the model computed by NumPy (float64, not
relaykit's kernels). It prints the wrong-output count and the largest error per
backend, model and way, and the throughput of 8 threads against 1 thread.

    python benchmarks/threads.py                       # everything
    python benchmarks/threads.py --backends ccompiler --runs 300
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler, jsonref
from relaykit.contrib import graph_executor

CNN_SHAPE = (1, 3, 16, 16)
CHAIN_SHAPE = (256, 256)


def cnn() -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((8, 3, 3, 3)).astype("float32") * 0.3,
        "b1": rng.standard_normal(8).astype("float32") * 0.1,
        "w2": rng.standard_normal((64, 2048)).astype("float32") * 0.05,
        "b2": rng.standard_normal(64).astype("float32") * 0.1,
    }
    x = relay.var("x", shape=CNN_SHAPE)
    w1, b1 = relay.var("w1", shape=(8, 3, 3, 3)), relay.var("b1", shape=(8,))
    w2, b2 = relay.var("w2", shape=(64, 2048)), relay.var("b2", shape=(64,))
    y = relay.nn.conv2d(x, w1, padding=(1, 1), channels=8, kernel_size=(3, 3))
    y = relay.nn.relu(relay.nn.bias_add(y, b1))
    y = relay.nn.batch_flatten(y)
    y = relay.nn.bias_add(relay.nn.dense(y, w2), b2)
    y = relay.add(relay.multiply(y, y), y)
    return tvm.IRModule.from_expr(relay.Function([x, w1, b1, w2, b2], y)), params


def numpy_cnn(x: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    w1 = p["w1"].astype(np.float64)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((1, 8, 16, 16))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nchw,oc->nohw", xp[:, :, i : i + 16, j : j + 16], w1[:, :, i, j])
    y = np.maximum(conv + p["b1"][None, :, None, None], 0).reshape(1, -1)
    y = y @ p["w2"].astype(np.float64).T + p["b2"]
    return y * y + y


def chain() -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    x = relay.var("x", shape=CHAIN_SHAPE)
    a = relay.multiply(x, x)
    b = relay.add(a, x)
    c = relay.multiply(b, x)
    d = relay.subtract(c, a)
    e = relay.multiply(d, relay.const(0.5))
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(e, b))), {}


def numpy_chain(x: np.ndarray, _: dict[str, np.ndarray]) -> np.ndarray:
    x = x.astype(np.float64)
    a = x * x
    b = a + x
    return (b * x - a) * 0.5 + b


MODELS: dict[str, tuple[Callable[[], Any], Callable[..., np.ndarray], tuple[int, ...]]] = {
    "cnn": (cnn, numpy_cnn, CNN_SHAPE),
    "chain": (chain, numpy_chain, CHAIN_SHAPE),
}


def dnnl_partition() -> Callable[..., Any] | None:
    try:
        from relaykit.backends import dnnl
    except ImportError:
        return None
    try:
        dnnl.find_onednn()
    except dnnl.DnnlNotFoundError as err:
        print(f"(dnnl skipped: {err})")
        return None
    return dnnl.partition_for_dnnl


def build(backend: str, mod: tvm.IRModule, params: dict[str, np.ndarray]) -> Any:
    if backend == "host":
        return relay.build(mod, target="llvm", params=params)
    partition = {
        "ccompiler": ccompiler.partition_for_ccompiler,
        "jsonref": jsonref.partition_for_jsonref,
        "dnnl": dnnl_partition(),
    }[backend]
    if partition is None:
        return None
    part = partition(mod, params)
    if not [gv for gv in part.get_global_vars() if gv.name_hint != "main"]:
        raise SystemExit(f"nothing was offloaded to {backend}")
    return relay.build(part, target="llvm")


def run_threads(
    executors: list[Any],
    pick: Callable[[int, int], int],
    threads: int,
    runs: int,
    xs: list[np.ndarray],
    refs: list[np.ndarray],
) -> tuple[int, float, float]:
    """(wrong outputs, largest relative error, seconds) of ``threads`` x ``runs``."""
    wrong = [0] * threads
    worst = [0.0] * threads
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads + 1)

    def body(t: int) -> None:
        barrier.wait()
        try:
            for r in range(runs):
                k = (t * 7 + r) % len(xs)
                m = executors[pick(t, r)]
                m.set_input("x", xs[k])
                m.run()
                got = m.get_output(0).numpy()
                err = float(np.max(np.abs(got - refs[k]) / (np.abs(refs[k]) + 1e-3)))
                worst[t] = max(worst[t], err)
                wrong[t] += not np.allclose(got, refs[k], rtol=1e-4, atol=1e-4)
        except BaseException as e:
            errors.append(e)

    pool = [threading.Thread(target=body, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    barrier.wait()
    start = time.perf_counter()
    for th in pool:
        th.join()
    seconds = time.perf_counter() - start
    if errors:
        raise errors[0]
    return sum(wrong), max(worst), seconds


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--backends", default="host,ccompiler,jsonref,dnnl")
    p.add_argument("--models", default="cnn,chain")
    p.add_argument("--executors", type=int, default=8)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--runs", type=int, default=100, help="runs per thread")
    args = p.parse_args(argv)
    print(
        f"relaykit executors in threads (python {sys.version.split()[0]}, numpy "
        f"{np.__version__}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}): "
        f"{args.executors} executors x {args.threads} threads x {args.runs} runs"
    )
    ways: dict[str, Callable[[int, int], int]] = {
        "own": lambda t, r: t % args.executors,
        "mixed": lambda t, r: (t + r) % args.executors,
        "shared": lambda t, r: 0,
    }
    header = (
        f"{'backend':9} {'model':5} {'way':6} {'wrong':>11} {'max rel err':>11} "
        f"{'runs/s':>8} {'1 thread':>8} {'ratio':>5}"
    )
    print(header)
    print("-" * len(header))
    totals: dict[str, int] = {}
    for backend in args.backends.split(","):
        for name in args.models.split(","):
            make, reference, shape = MODELS[name]
            mod, params = make()
            lib = build(backend, mod, params)
            if lib is None:
                continue
            rng = np.random.default_rng(1)
            xs = [rng.standard_normal(shape).astype("float32") for _ in range(16)]
            refs = [reference(x, params) for x in xs]
            for way, pick in ways.items():
                executors = [
                    graph_executor.GraphModule(lib["default"](tvm.cpu()))
                    for _ in range(args.executors)
                ]
                _, _, one = run_threads(executors, pick, 1, args.runs, xs, refs)
                time.sleep(0.2)  # a pause between bursts
                wrong, worst, seconds = run_threads(
                    executors, pick, args.threads, args.runs, xs, refs
                )
                time.sleep(0.2)
                total = args.threads * args.runs
                totals[backend] = totals.get(backend, 0) + wrong
                rate, rate1 = total / seconds, args.runs / one
                print(
                    f"{backend:9} {name:5} {way:6} {wrong:5d}/{total:<5d} {worst:11.2e} "
                    f"{rate:8.0f} {rate1:8.0f} {rate / rate1:5.2f}"
                )
    print("\nwrong outputs per backend: " + ", ".join(f"{b} {n}" for b, n in totals.items()))


if __name__ == "__main__":
    main()
