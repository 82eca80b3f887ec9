"""Shared harness of the host/onnxruntime benchmarks (transformers.py, host_cnn.py).

Every engine runs in this one process on the same ONNX model and the same
inputs. Timing is in bursts: each burst starts after a pause (``gap``) and
one untimed run (it wakes that engine's own threads), then ``burst`` timed
runs; the engines take turns, in alternating order, so drift in the machine
hits them alike. Medians are compared.

OpenMP: relaykit bounds how long oneDNN's idle OpenMP threads spin (``GOMP_SPINCOUNT``,
see ``relaykit.backends.dnnl.run.native``) when it is the first to load ``libgomp``. These
benchmarks import torch (to export the models) before any dnnl region exists, and
torch loads its own ``libgomp.so.1``, which oneDNN then shares, with GNU OpenMP's
long-spinning default: on a loaded 2-core machine a BERT-base region then burned 760 ms
of CPU per 120 ms of work. So, as relaykit would, the harness sets relaykit's spin count
when the user has set neither ``OMP_WAIT_POLICY`` nor ``GOMP_SPINCOUNT``.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

Runner = Callable[[], list[np.ndarray]]

# relaykit.backends.dnnl.run.native.SPIN_COUNT (not imported: torch comes first)
SPIN_COUNT = "10000"
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT  # before torch loads libgomp (see above)


@dataclass
class Engine:
    name: str
    run: Runner
    build_s: float = 0.0
    note: str = ""
    times: list[float] = field(default_factory=list)
    cpu_times: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return 1e3 * statistics.median(self.times) if self.times else float("nan")

    @property
    def min_ms(self) -> float:
        """The best run: on a loaded machine, closer to what the engine can do."""
        return 1e3 * min(self.times) if self.times else float("nan")

    @property
    def cpu_ms(self) -> float:
        """Median CPU time of this process per run (all its threads, spinning ones included).

        Far less sensitive to other processes than wall time; with one thread it is
        the work an engine does.
        """
        return 1e3 * statistics.median(self.cpu_times) if self.cpu_times else float("nan")


def num_threads(requested: int | None) -> int:
    """The thread count relaykit's policy resolves ``requested`` to (all cores by default)."""
    try:
        from relaykit.runtime.threads import resolve_num_threads
    except ImportError:  # an older relaykit: the dnnl backend's own resolution
        from relaykit.backends.dnnl import resolve_num_threads
    return resolve_num_threads(requested)


def ort_engine(model_bytes: bytes, feeds: Mapping[str, np.ndarray], threads: int) -> Engine:
    import onnxruntime as ort

    t = time.perf_counter()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
    build = time.perf_counter() - t
    feeds = dict(feeds)
    return Engine("onnxruntime", lambda: sess.run(None, feeds), build)


def relaykit_engine(
    model_bytes: bytes,
    feeds: Mapping[str, np.ndarray],
    threads: int,
    dnnl: bool = False,
) -> Engine:
    """relaykit's host path (``relay.build`` + graph executor), or with oneDNN regions."""
    import onnx

    import relaykit as tvm
    from relaykit import relay
    from relaykit.contrib import graph_executor
    from relaykit.frontend import from_onnx

    t = time.perf_counter()
    model = onnx.load_from_string(model_bytes)
    shapes = {k: v.shape for k, v in feeds.items()}
    mod, params = from_onnx(model, shape=shapes)
    config: dict = {"relay.num_threads": threads}
    note = ""
    if dnnl:
        from relaykit.backends.dnnl import OPTIONS_KEY, partition_for_dnnl

        mod = partition_for_dnnl(mod, params)
        config[OPTIONS_KEY] = {"num_threads": threads}
        regions = sum(1 for gv in mod.get_global_vars() if gv.name_hint != "main")
        note = f"{regions} regions"
    try:
        ctx = tvm.transform.PassContext(opt_level=3, config=config)
    except Exception:  # a relaykit without the thread option
        config.pop("relay.num_threads")
        ctx = tvm.transform.PassContext(opt_level=3, config=config)
    with ctx:
        lib = relay.build(mod, target="llvm", params=params)
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    build = time.perf_counter() - t
    n_out = gmod.get_num_outputs()

    def run() -> list[np.ndarray]:
        for k, v in feeds.items():
            gmod.set_input(k, v)
        gmod.run()
        return [gmod.get_output(i).numpy() for i in range(n_out)]

    return Engine("relaykit+dnnl" if dnnl else "relaykit host", run, build, note)


def rel_error(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """Largest ``|got - want| / max|want|`` over the outputs (relative to each output's scale)."""
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        g64, w64 = np.asarray(g, np.float64), np.asarray(w, np.float64)
        scale = max(float(np.abs(w64).max()), 1e-30)
        worst = max(worst, float(np.abs(g64 - w64).max()) / scale)
    return worst


def time_engines(engines: list[Engine], runs: int, burst: int, gap: float) -> None:
    """Fill each engine's ``times``: interleaved bursts, a pause and a warm-up run before each."""
    for e in engines:
        for _ in range(2):
            e.run()
    rounds = max(1, -(-runs // burst))
    for i in range(rounds):
        order = engines if i % 2 == 0 else list(reversed(engines))
        for e in order:
            time.sleep(gap)
            e.run()
            for _ in range(burst):
                c = time.process_time()
                t = time.perf_counter()
                e.run()
                e.times.append(time.perf_counter() - t)
                e.cpu_times.append(time.process_time() - c)


def report(model: str, engines: list[Engine], errors: Mapping[str, float]) -> None:
    base = next(e for e in engines if e.name == "onnxruntime")
    for e in engines:
        ratio = e.median_ms / base.median_ms
        best_ratio = e.min_ms / base.min_ms
        cpu_ratio = e.cpu_ms / base.cpu_ms
        err = errors.get(e.name)
        err_s = f"{err:9.1e}" if err is not None else f"{'-':>9}"
        ok = "" if err is None or err <= 1e-4 else "  MISMATCH > 1e-4"
        print(
            f"{model:<24}{e.name:<15}{e.median_ms:>10.2f}{ratio:>8.2f}x"
            f"{e.min_ms:>9.2f}{best_ratio:>8.2f}x{e.cpu_ms:>9.2f}{cpu_ratio:>8.2f}x{err_s}"
            f"{e.build_s:>9.2f}  {e.note}{ok}",
            flush=True,
        )


def header() -> None:
    print(
        f"{'model':<24}{'engine':<15}{'median ms':>10}{'ratio':>9}{'min ms':>9}{'ratio':>9}"
        f"{'cpu ms':>9}{'ratio':>9}{'rel err':>9}{'build s':>9}"
    )
