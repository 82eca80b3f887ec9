"""Interpreter vs graph executor: latency, dispatch overhead, intermediate memory.

For mlp, VGG-11, ResNet-18 and ResNet-50 (``relay.testing``, batch 1,
224x224 unless ``--image`` says otherwise) it prints the build time, the
median latency of the reference interpreter and of the graph executor,
the number of executor steps, and the intermediate memory with and without
the static memory plan. A chain of tiny operators measures the per-op
dispatch overhead of both executors against the bare NumPy call, and the
per-op cost of lowering to a plan and of interpreting. When
``onnx``, ``onnxruntime`` and ``relaykit.frontend.from_onnx`` are available,
ONNX's light ResNet-50 is timed in onnxruntime and in relaykit, interleaved.

    python benchmarks/executor.py                 # everything
    python benchmarks/executor.py --models mlp,resnet18 --repeat 5
    python benchmarks/executor.py --threads 1     # BLAS and onnxruntime on one thread

On a machine that other processes keep busy, multi-threaded BLAS (and
onnxruntime) can be several times slower than one thread: compare both.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.execution.lower import lower_to_plan
from relaykit.testing import mlp, resnet, vgg

MIB = 1 << 20


def median_ms(fn: Callable[[], Any], repeat: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def workload(name: str, image: int) -> tuple[Any, dict[str, Any], tuple[int, ...]]:
    if name == "mlp":
        mod, params = mlp.get_workload(batch_size=1)
        return mod, params, (1, 1, 28, 28)
    shape = (3, image, image)
    if name == "vgg11":
        mod, params = vgg.get_workload(1, num_classes=1000, image_shape=shape, num_layers=11)
    elif name == "resnet18":
        mod, params = resnet.get_workload(1, 1000, num_layers=18, image_shape=shape)
    elif name == "resnet50":
        mod, params = resnet.get_workload(1, 1000, num_layers=50, image_shape=shape)
    else:
        raise SystemExit(f"unknown model {name!r}")
    return mod, params, (1, *shape)


def bench_model(name: str, image: int, repeat: int, interp_repeat: int) -> dict[str, Any]:
    mod, params, shape = workload(name, image)
    data = np.random.default_rng(0).standard_normal(shape).astype("float32")
    t = time.perf_counter()
    lib = relay.build(mod, target="llvm", params=params)
    build_s = time.perf_counter() - t
    ex = lib["default"](tvm.cpu(0))
    ex.set_input("data", data)
    graph_ms = median_ms(ex.run, repeat, warmup=2)
    interp = relay.create_executor("debug", mod=mod).evaluate()
    interp_ms = median_ms(lambda: interp(data, **params), interp_repeat)
    out = ex.get_output(0).numpy()
    ref = interp(data, **params).numpy()
    report = ex.memory_report()
    return {
        "model": name,
        "build_s": build_s,
        "interp_ms": interp_ms,
        "graph_ms": graph_ms,
        "speedup": interp_ms / graph_ms,
        "steps": ex.num_steps,
        "unplanned_mib": report.unplanned / MIB,
        "planned_mib": report.planned / MIB,
        "workspace_mib": report.workspace / MIB,
        "live_peak_mib": report.live_peak / MIB,
        "max_abs_diff": float(np.abs(out - ref).max()),
    }


def bench_dispatch(n_ops: int, repeat: int) -> dict[str, float]:
    """Per-op time of a chain of ``n_ops`` tiny ``nn.relu`` ops, against the bare ufunc."""
    x = relay.var("x", shape=(4,))
    y = x
    for _ in range(n_ops):
        y = relay.nn.relu(y)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    data = np.ones(4, "float32")
    ex = relay.build(mod, target="llvm")["default"](tvm.cpu(0))
    ex.set_input("x", data)
    graph_us = median_ms(ex.run, repeat, warmup=3) * 1000 / n_ops
    interp = relay.create_executor("debug", mod=mod).evaluate()
    interp_us = median_ms(lambda: interp(data), max(3, repeat // 4)) * 1000 / n_ops
    a, o = np.ones(4, "float32"), np.empty(4, "float32")

    def bare() -> None:
        for _ in range(n_ops):
            np.maximum(a, 0, out=o)

    bare_us = median_ms(bare, repeat, warmup=3) * 1000 / n_ops
    return {
        "graph_us_per_op": graph_us,
        "interp_us_per_op": interp_us,
        "bare_ufunc_us": bare_us,
        "graph_dispatch_overhead_us": graph_us - bare_us,
        "interp_dispatch_overhead_us": interp_us - bare_us,
    }


def bench_api(repeat: int) -> dict[str, float]:
    """Microseconds of ``set_input``, ``run`` and ``get_output`` on a one-op graph (the
    executor's own cost per call), best of ``repeat`` bursts of 2000 calls."""
    x = relay.var("x", shape=(4,))
    ex = relay.build(tvm.IRModule.from_expr(relay.Function([x], x + x)), target="llvm")["default"](
        tvm.cpu(0)
    )
    data = np.ones(4, "float32")
    ex.set_input("x", data)
    ex.run()
    calls = {
        "set_input_us": lambda: ex.set_input("x", data),
        "run_us": ex.run,
        "get_output_us": lambda: ex.get_output(0),
    }
    out = {}
    for name, fn in calls.items():
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            for _ in range(2000):
                fn()
            best = min(best, (time.perf_counter() - t) / 2000)
        out[name] = best * 1e6
    return out


def bench_lowering(n_ops: int, repeat: int) -> dict[str, float]:
    """Per-op time of the two evaluator subclasses on a chain of ``n_ops`` tiny ops:
    lowering to a memory-planned plan (``lower_to_plan``) and the reference interpreter."""
    x = relay.var("x", shape=(4,))
    y = x
    for i in range(n_ops):
        y = relay.nn.relu(y) if i % 2 else relay.add(y, relay.const(1.0))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))
    lower_us = best_ms(lambda: lower_to_plan(mod), repeat) * 1000 / n_ops
    interp = relay.create_executor("debug", mod=mod).evaluate()
    data = np.ones(4, "float32")
    interp_us = best_ms(lambda: interp(data), repeat) * 1000 / n_ops
    return {"lower_us_per_op": lower_us, "interp_us_per_op": interp_us}


def best_ms(fn: Callable[[], Any], repeat: int) -> float:
    """The fastest of ``repeat`` runs (CPU time of this process, robust on a busy machine)."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times) * 1000


def bench_onnxruntime(repeat: int) -> dict[str, Any] | None:
    """ONNX's light ResNet-50 in onnxruntime and in relaykit, timed interleaved."""
    try:
        import onnx
        import onnxruntime as ort

        from relaykit.frontend import from_onnx
    except ImportError as err:
        print(f"(onnxruntime column skipped: {err})")
        return None
    path = os.path.join(
        os.path.dirname(onnx.__file__), "backend", "test", "data", "light", "light_resnet50.onnx"
    )
    if not os.path.exists(path):
        print(f"(onnxruntime column skipped: {path} not found)")
        return None
    options = ort.SessionOptions()
    options.log_severity_level = 3  # the light models carry an unused initializer: no warning
    threads = os.environ.get("RELAYKIT_BENCH_THREADS")
    if threads:
        options.intra_op_num_threads = int(threads)
    sess = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    data = np.random.default_rng(0).standard_normal(inp.shape).astype("float32")
    mod, params = from_onnx(onnx.load(path))
    lib = relay.build(mod, target="llvm", params=params)
    ex = lib["default"](tvm.cpu(0))
    ex.set_input(inp.name, data)
    for _ in range(3):
        sess.run(None, {inp.name: data})
        ex.run()
    ort_t, rk_t = [], []
    for _ in range(repeat):  # interleaved, so both see the same machine
        t = time.perf_counter()
        sess.run(None, {inp.name: data})
        ort_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        ex.run()
        rk_t.append(time.perf_counter() - t)
    ort_ms = statistics.median(ort_t) * 1000
    rk_ms = statistics.median(rk_t) * 1000
    ref = sess.run(None, {inp.name: data})[0]
    return {
        "onnxruntime_ms": ort_ms,
        "relaykit_ms": rk_ms,
        "ratio": rk_ms / ort_ms,
        "max_abs_diff": float(np.abs(ex.get_output(0).numpy() - ref).max()),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--models", default="mlp,vgg11,resnet18,resnet50")
    p.add_argument("--image", type=int, default=224)
    p.add_argument("--repeat", type=int, default=10, help="graph executor runs per model")
    p.add_argument("--interp-repeat", type=int, default=3, help="interpreter runs per model")
    p.add_argument("--no-ort", action="store_true", help="skip the onnxruntime comparison")
    p.add_argument("--threads", type=int, default=0, help="threads of BLAS and onnxruntime")
    args = p.parse_args(argv)
    if args.threads and os.environ.get("RELAYKIT_BENCH_THREADS") != str(args.threads):
        # BLAS reads its thread count at import: start again with it set.
        for var in ("RELAYKIT_BENCH_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
            os.environ[var] = str(args.threads)
        os.execv(sys.executable, [sys.executable, *sys.argv])

    print(
        f"relaykit graph executor benchmark (python {sys.version.split()[0]}, numpy "
        f"{np.__version__}, {os.cpu_count()} cpus, BLAS threads "
        f"{os.environ.get('OPENBLAS_NUM_THREADS', 'default')}, load {os.getloadavg()[0]:.2f})"
    )
    header = (
        f"{'model':9} {'build s':>7} {'interp ms':>10} {'graph ms':>9} {'speedup':>7} "
        f"{'steps':>5} {'no plan MiB':>11} {'plan MiB':>8} {'+ws MiB':>7} {'live MiB':>8}"
    )
    print(header)
    print("-" * len(header))
    for name in args.models.split(","):
        r = bench_model(name.strip(), args.image, args.repeat, args.interp_repeat)
        print(
            f"{r['model']:9} {r['build_s']:7.2f} {r['interp_ms']:10.2f} {r['graph_ms']:9.2f} "
            f"{r['speedup']:6.1f}x {r['steps']:5d} {r['unplanned_mib']:11.2f} "
            f"{r['planned_mib']:8.2f} {r['workspace_mib']:7.2f} {r['live_peak_mib']:8.2f}"
        )
    d = bench_dispatch(1000, args.repeat)
    print(
        f"\ndispatch (1000 chained nn.relu on 4 floats): graph executor "
        f"{d['graph_us_per_op']:.2f} us/op, interpreter {d['interp_us_per_op']:.2f} us/op, "
        f"bare ufunc {d['bare_ufunc_us']:.2f} us/op\n"
        f"  => per-op dispatch overhead: graph executor {d['graph_dispatch_overhead_us']:.2f} us, "
        f"interpreter {d['interp_dispatch_overhead_us']:.2f} us"
    )
    api = bench_api(max(5, args.repeat))
    print(
        f"API on a one-op graph (best burst): set_input {api['set_input_us']:.2f} us, run "
        f"{api['run_us']:.2f} us, get_output {api['get_output_us']:.2f} us"
    )
    low = bench_lowering(20000, max(3, args.repeat // 2))
    print(
        f"evaluator (20000-op chain, best CPU time): lower_to_plan {low['lower_us_per_op']:.2f} "
        f"us/op, interpreter {low['interp_us_per_op']:.2f} us/op"
    )
    if not args.no_ort:
        o = bench_onnxruntime(max(args.repeat, 10))
        if o is not None:
            print(
                f"\nONNX light ResNet-50 (interleaved medians): onnxruntime "
                f"{o['onnxruntime_ms']:.1f} ms, relaykit graph executor {o['relaykit_ms']:.1f} ms "
                f"({o['ratio']:.2f}x onnxruntime)"
            )


if __name__ == "__main__":
    main()
