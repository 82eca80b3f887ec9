"""relaykit + oneDNN against ONNX Runtime: batch-1 fp32 latency on the light ONNX models.

    python benchmarks/dnnl_vs_ort.py                    # all six models, 40 runs each
    python benchmarks/dnnl_vs_ort.py --models resnet50 --runs 100 --threads 2
    python benchmarks/dnnl_vs_ort.py --models squeezenet,vgg19 --repeat 3  # spread of ratios
    python benchmarks/dnnl_vs_ort.py --profile resnet50  # per-step times of the dnnl region
    python benchmarks/dnnl_vs_ort.py --models /tmp/resnet18.onnx   # any 1x3x224x224 model

Both engines run in this one process, on the same model (``onnx``'s
``backend/test/data/light`` files) and the same input, with the same thread
count (all cores unless ``--threads``), onnxruntime with its default session
options. Runs are interleaved in short bursts — relaykit, onnxruntime,
onnxruntime, relaykit, ... — so that drift in the machine's state hits both
alike; the medians are compared and the ratio ``relaykit / onnxruntime``
printed (below 1.0: relaykit is faster), and so are the best runs ("min ratio"):
on a machine other processes share, the median mostly measures how each engine's
threads fare against them (oneDNN's OpenMP team waits at every primitive for a
descheduled worker; onnxruntime's pool runs unstarted work on the calling thread),
the best run what the engines can do. ``--repeat N`` times each build N times and
prints the spread; "rel err" is max |relaykit - onnxruntime| / max |onnxruntime|.

Each burst starts after a pause (``--gap``, 0.2 s) and with one untimed run:
both engines keep their idle worker threads spinning for a while after a run
(onnxruntime's for tens of milliseconds), and without the pause an engine
would be timed while the other's threads still hold the cores — on 2 cores
that doubles the latency of whichever runs second. The untimed run wakes the
engine's own threads, so the timed runs (``--burst`` of them) measure warm,
back-to-back inference as a server sees it.

Build time of relaykit is reported per model as import (``from_onnx``) +
partition (``partition_for_dnnl``) + codegen and compile (``relay.build``:
lowering, fusion, oneDNN primitive creation, weight reorders). The native
runtime library is compiled once per oneDNN version and cached; when this run
had to compile it, that time is reported separately.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

MODELS = {
    "resnet50": "light_resnet50.onnx",
    "vgg19": "light_vgg19.onnx",
    "densenet121": "light_densenet121.onnx",
    "inception_v1": "light_inception_v1.onnx",
    "squeezenet": "light_squeezenet.onnx",
    "shufflenet": "light_shufflenet.onnx",
}


@dataclass
class Result:
    name: str
    import_s: float
    partition_s: float
    build_s: float
    relaykit_ms: float
    ort_ms: float
    relaykit_min: float
    ort_min: float
    rel_err: float  # max |relaykit - onnxruntime| / max |onnxruntime|
    regions: int
    host_ops: int

    @property
    def ratio(self) -> float:
        return self.relaykit_ms / self.ort_ms

    @property
    def min_ratio(self) -> float:
        """Best run against best run: on a shared machine, closer to what the engines can do."""
        return self.relaykit_min / self.ort_min


def _light_dir() -> str:
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def _host_op_count(mod) -> int:
    from relaykit.ir.expr import Call
    from relaykit.ir.functor import post_order
    from relaykit.ir.op import Op

    return sum(1 for n in post_order(mod["main"].body) if type(n) is Call and type(n.op) is Op)


def _model_path(name: str) -> str:
    """A light model by name, or any ONNX file (input [1, 3, 224, 224]) by path."""
    return name if name.endswith(".onnx") else os.path.join(_light_dir(), MODELS[name])


def build_relaykit(path: str, threads: int, layout: str = "auto"):
    """(executor, input name, times) for the ONNX model at ``path``."""
    import onnx

    import relaykit as tvm
    from relaykit import relay
    from relaykit.backends.dnnl import OPTIONS_KEY, partition_for_dnnl
    from relaykit.contrib import graph_executor
    from relaykit.frontend import from_onnx

    model = onnx.load(path)
    t0 = time.perf_counter()
    mod, params = from_onnx(model)
    t1 = time.perf_counter()
    pmod = partition_for_dnnl(mod, params)
    t2 = time.perf_counter()
    with tvm.transform.PassContext(
        opt_level=3, config={OPTIONS_KEY: {"num_threads": threads, "layout": layout}}
    ):
        lib = relay.build(pmod, target="llvm", params=params)
    t3 = time.perf_counter()
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    name = mod["main"].params[0].name_hint
    regions = sum(1 for gv in pmod.get_global_vars() if gv.name_hint != "main")
    return gmod, name, (t1 - t0, t2 - t1, t3 - t2), regions, _host_op_count(pmod), lib


def build_ort(path: str, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.log_severity_level = 3
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    return sess, sess.get_inputs()[0].name


def bench_model(
    name: str,
    runs: int,
    threads: int,
    gap: float = 0.2,
    burst: int = 5,
    layout: str = "auto",
    repeat: int = 1,
) -> list[Result]:
    """``repeat`` timings (each of ``runs`` runs per engine) of one build of the model."""
    path = _model_path(name)
    built = build_relaykit(path, threads, layout)
    gmod, in_name, (t_imp, t_part, t_build), regions, host_ops, _ = built
    sess, ort_name = build_ort(path, threads)
    x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)

    def run_relaykit() -> np.ndarray:
        gmod.set_input(in_name, x)
        gmod.run()
        return gmod.get_output(0).numpy()

    def run_ort() -> np.ndarray:
        return sess.run(None, {ort_name: x})[0]

    ours, theirs = run_relaykit(), run_ort()
    diff = float(np.abs(ours - theirs).max() / max(float(np.abs(theirs).max()), 1e-30))
    for _ in range(3):
        run_relaykit()
        run_ort()
    results = []
    for _ in range(repeat):
        t_ours: list[float] = []
        t_ort: list[float] = []
        rounds = max(1, (runs + burst - 1) // burst)
        for i in range(rounds):
            order = (run_relaykit, run_ort) if i % 2 == 0 else (run_ort, run_relaykit)
            for fn in order:
                time.sleep(gap)
                fn()
                times = t_ours if fn is run_relaykit else t_ort
                for _ in range(burst):
                    t = time.perf_counter()
                    fn()
                    times.append(time.perf_counter() - t)
        results.append(Result(
            name, t_imp, t_part, t_build,
            1e3 * statistics.median(t_ours), 1e3 * statistics.median(t_ort),
            1e3 * min(t_ours), 1e3 * min(t_ort), diff, regions, host_ops,
        ))  # fmt: skip
    return results


def profile_model(name: str, threads: int, layout: str = "auto") -> None:
    path = _model_path(name)
    _, _, _, _, _, lib = build_relaykit(path, threads, layout)
    x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
    dnnl = next(m for m in lib.lib.imported_modules if m.type_key == "dnnl")
    for region in dnnl.regions.values():
        if len(region.input_shapes) != 1 or region.input_shapes[0] != x.shape:
            continue
        for _ in range(5):
            region(x)
        best: list[float] | None = None
        steps: list[str] = []
        for _ in range(10):
            prof = region.profile([x])
            steps = [s for s, _ in prof]
            times = [t for _, t in prof]
            best = times if best is None else [min(a, b) for a, b in zip(best, times, strict=True)]
        assert best is not None
        total = sum(best)
        print(f"{region.name}: {len(steps)} steps, {total:.2f} ms (sum of per-step minima)")
        for s, t in sorted(zip(steps, best, strict=True), key=lambda p: -p[1])[:40]:
            print(f"  {t:7.3f} ms  {s[:150]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated names")
    parser.add_argument("--runs", type=int, default=40, help="timed runs per engine")
    parser.add_argument("--threads", type=int, default=None, help="threads (default: all)")
    parser.add_argument("--gap", type=float, default=0.2, help="pause before each burst (s)")
    parser.add_argument("--burst", type=int, default=5, help="timed runs per burst")
    parser.add_argument("--repeat", type=int, default=1, help="timings per model (one build)")
    parser.add_argument("--layout", default="auto", help="dnnl layout: auto, nhwc, blocked")
    parser.add_argument("--profile", metavar="MODEL", help="per-step times of one model")
    args = parser.parse_args(argv)

    from relaykit.backends.dnnl import resolve_num_threads
    from relaykit.backends.dnnl.run.native import load_runtime

    threads = resolve_num_threads(args.threads)
    t = time.perf_counter()
    load_runtime()
    t_runtime = time.perf_counter() - t
    if args.profile:
        profile_model(args.profile, threads, args.layout)
        return 0

    import onnxruntime

    import relaykit

    print(
        f"relaykit {relaykit.__version__} + oneDNN vs onnxruntime {onnxruntime.__version__}, "
        f"{threads} threads, layout {args.layout}, batch 1, fp32, median of {args.runs} runs in "
        "interleaved "
        f"bursts of {args.burst}, {args.gap:g} s apart"
    )
    print(
        f"native runtime library: {t_runtime:.2f} s to load "
        "(includes its one-time compile when it was not cached)"
    )
    header = (
        f"{'model':<14}{'relaykit ms':>12}{'ort ms':>10}{'ratio':>8}{'min ms':>8}{'ort min':>8}"
        f"{'min ratio':>10}{'rel err':>10}"
        f"{'regions':>9}{'host ops':>9}{'import s':>10}{'partition s':>12}{'build s':>9}"
    )
    print(header)
    results: dict[str, list[Result]] = {}
    for name in args.models.split(","):
        reps = bench_model(
            name.strip(), args.runs, threads, args.gap, args.burst, args.layout, args.repeat
        )
        results[reps[0].name] = reps
        for r in reps:
            print(
                f"{r.name:<14}{r.relaykit_ms:>12.2f}{r.ort_ms:>10.2f}{r.ratio:>8.3f}"
                f"{r.relaykit_min:>8.2f}{r.ort_min:>8.2f}{r.min_ratio:>10.3f}"
                f"{r.rel_err:>10.1e}{r.regions:>9}{r.host_ops:>9}{r.import_s:>10.2f}"
                f"{r.partition_s:>12.2f}{r.build_s:>9.2f}",
                flush=True,
            )
    if "resnet50" in results:
        r = results["resnet50"][0]
        total = r.import_s + r.partition_s + r.build_s
        print(
            f"build time of dnnl ResNet-50 (import + partition + codegen + compile): "
            f"{total:.2f} s (aim: < 10 s)"
        )
    ratios = {name: statistics.median(r.ratio for r in reps) for name, reps in results.items()}
    if args.repeat > 1:
        for name, reps in results.items():
            med = sorted(r.ratio for r in reps)
            mins = sorted(r.min_ratio for r in reps)
            print(
                f"{name:<14} ratio of medians {ratios[name]:.3f} "
                f"(range {med[0]:.3f}-{med[-1]:.3f}), ratio of minima "
                f"{statistics.median(mins):.3f} (range {mins[0]:.3f}-{mins[-1]:.3f})"
            )
    worst = max(ratios, key=lambda n: ratios[n])
    print(
        f"worst ratio: {worst} {ratios[worst]:.3f}; "
        f"faster than onnxruntime on {sum(v < 1 for v in ratios.values())}/{len(ratios)} models"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
