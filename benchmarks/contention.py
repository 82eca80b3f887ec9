"""relaykit + oneDNN against onnxruntime on a busy machine: 0, 1 and 2 competing
busy processes on the same cores.

    python benchmarks/contention.py                          # all three models
    python benchmarks/contention.py --models resnet18 --busy 0,1 --runs 30

Models (batch 1, fp32, random weights, written in plain PyTorch and exported to
ONNX here): ``resnet18`` (ResNet-18, 224x224), ``mobilenetv2`` (MobileNetV2,
224x224) and ``bert`` (the BERT-like encoder of ``benchmarks/transformers.py``:
4 layers, hidden 256, 4 heads, FFN 1024, seq 128). No test uses them.

For each count of busy processes (``multiprocessing`` spinners, each a Python
loop on one core, started before and stopped after that phase), every engine
runs in this one process on the same model and inputs, with the same thread
count (all cores), in interleaved bursts with a pause before each
(``_bench.time_engines``). Engines: onnxruntime (default session options),
relaykit + dnnl with contention handling (the default) and relaykit + dnnl with
``RELAYKIT_DNNL_ADAPTIVE=0`` (two executors of one build: the switch is read when
an executor binds its regions), so the same run shows what the handling gains
under load and that it costs nothing on a quieter machine. Printed per phase: the
1-minute load average and cores before it, the run-queue wait share relaykit's
monitor measured, how many dnnl region calls ran their one-thread build, and per
engine the median latency and its ratio to onnxruntime's.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _bench  # sets the OpenMP spin count before torch loads libgomp
from _torch_models import mobilenetv2, resnet18


def _spin(stop) -> None:  # a busy process: one core, until told to stop
    n = 0
    while True:
        n += 1
        if n % 100_000 == 0 and stop.is_set():
            return


def _randomise(model) -> None:
    import torch

    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1, generator=g)
                m.running_var.uniform_(0.5, 1.5, generator=g)
                m.weight.uniform_(0.5, 1.5, generator=g)
                m.bias.uniform_(-0.1, 0.1, generator=g)


def export_cnn(name: str) -> tuple[bytes, dict[str, np.ndarray]]:
    import io
    import warnings

    import torch

    torch.manual_seed(0)
    model = (resnet18 if name == "resnet18" else mobilenetv2)().eval()
    _randomise(model)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.from_numpy(x),), buf, input_names=["data"],
                          output_names=["out"], opset_version=17, dynamo=False)  # fmt: skip
    return buf.getvalue(), {"data": x}


def export_bert() -> tuple[bytes, dict[str, np.ndarray]]:
    import transformers as tr  # benchmarks/transformers.py

    cfg = tr.MODELS["bert_issue"]
    feeds = tr._inputs(cfg, np.random.default_rng(0))
    return tr.export_torch(cfg, feeds), feeds


MODELS = ("resnet18", "mobilenetv2", "bert")


# -- engines ---------------------------------------------------------------------------------


def relaykit_pair(model_bytes: bytes, feeds: dict[str, np.ndarray], threads: int):
    """Two relaykit + dnnl engines of one build: contention handling on, and off."""
    import onnx

    import relaykit as tvm
    from relaykit import relay
    from relaykit.backends.dnnl import OPTIONS_KEY, partition_for_dnnl
    from relaykit.contrib import graph_executor
    from relaykit.frontend import from_onnx
    from relaykit.runtime.contention import ADAPTIVE_ENV

    t = time.perf_counter()
    mod, params = from_onnx(onnx.load_from_string(model_bytes),
                            shape={k: v.shape for k, v in feeds.items()})  # fmt: skip
    mod = partition_for_dnnl(mod, params)
    config = {"relay.num_threads": threads, OPTIONS_KEY: {"num_threads": threads}}
    with tvm.transform.PassContext(opt_level=3, config=config):
        lib = relay.build(mod, target="llvm", params=params)
    build = time.perf_counter() - t
    engines = []
    for name, env in (("relaykit+dnnl", None), ("rk+dnnl ADAPTIVE=0", "0")):
        old = os.environ.pop(ADAPTIVE_ENV, None)
        if env is not None:
            os.environ[ADAPTIVE_ENV] = env
        try:
            gmod = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        finally:
            os.environ.pop(ADAPTIVE_ENV, None)
            if old is not None:
                os.environ[ADAPTIVE_ENV] = old
        n_out = gmod.get_num_outputs()

        def run(gmod=gmod, n_out=n_out) -> list[np.ndarray]:
            for k, v in feeds.items():
                gmod.set_input(k, v)
            gmod.run()
            return [gmod.get_output(i).numpy() for i in range(n_out)]

        engines.append(_bench.Engine(name, run, build))
    return engines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--busy", default="0,1,2", help="counts of busy processes (0,1,2)")
    ap.add_argument("--runs", type=int, default=30, help="timed runs per engine per phase")
    ap.add_argument("--burst", type=int, default=5)
    ap.add_argument("--gap", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    threads = _bench.num_threads(args.threads)
    from relaykit.runtime.contention import get_monitor
    from relaykit.runtime.threads import available_cores

    monitor = get_monitor()
    cores = available_cores()
    ctx = mp.get_context("spawn")
    summary: list[tuple[str, int, float, float, float]] = []
    for model in args.models.split(","):
        model_bytes, feeds = export_bert() if model == "bert" else export_cnn(model)
        engines = [_bench.ort_engine(model_bytes, feeds, threads)]
        engines += relaykit_pair(model_bytes, feeds, threads)
        want = engines[0].run()
        for e in engines[1:]:
            err = _bench.rel_error(e.run(), want)
            if err > 1e-3:
                print(f"{model}: {e.name} differs from onnxruntime by {err:.1e}")
        print(f"\n{model} ({threads} threads, {cores} cores)")
        names = "".join(f"{e.name:>20}" for e in engines)
        print(f"{'busy':>4} {'load':>5} {'wait':>5} {'serial':>9}  {names}   (ms, x ort)")
        for busy in (int(b) for b in args.busy.split(",")):
            stop = ctx.Event()
            spinners = [ctx.Process(target=_spin, args=(stop,), daemon=True) for _ in range(busy)]
            for p in spinners:
                p.start()
            time.sleep(0.5 if busy else 0.0)
            load = os.getloadavg()[0]
            before = monitor.stats.copy()
            for e in engines:
                e.times.clear()
                e.cpu_times.clear()
            _bench.time_engines(engines, args.runs, args.burst, args.gap)
            stats = monitor.stats.since(before)
            stop.set()
            for p in spinners:
                p.join(5)
                if p.is_alive():
                    p.terminate()
            base = statistics.median(engines[0].times)
            medians = [statistics.median(e.times) for e in engines]
            cells = "".join(f"{1e3 * m:>12.2f} {m / base:>6.2f}x" for m in medians)
            serial = f"{stats.serial_calls}/{stats.region_calls}"
            print(f"{busy:>4} {load:>5.1f} {stats.wait_share:>5.0%} {serial:>9}  {cells}",
                  flush=True)  # fmt: skip
            on, off = (statistics.median(e.times) for e in engines[1:])
            summary.append((model, busy, on / base, off / base, load))
    print("\nratio to onnxruntime (median): model, busy processes, handling on, off, load")
    for model, busy, on, off, load in summary:
        print(f"  {model:<12} {busy}  {on:5.2f}x  {off:5.2f}x  load {load:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
