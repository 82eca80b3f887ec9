"""PyTorch models: torch eager vs torch.compile (inductor) vs torch.compile(backend="relaykit").

    python benchmarks/pytorch.py                              # the five models, full size
    python benchmarks/pytorch.py --models resnet18,bert --threads 2 --runs 20
    python benchmarks/pytorch.py --no-inductor --small        # quick: small models, no inductor

The models are the five of issue 14, defined in plain PyTorch with random weights
(tests/frontend/pytorch/torch_models.py; torchvision does not install here):
ResNet-18, ResNet-50, MobileNetV2, VGG-11 (batch 1, 3x224x224) and a BERT-like
encoder (4 layers, hidden 768, 12 heads, 128 tokens). ``--small`` takes the small
versions the tests use.

Per model it prints

* import time: ``from_pytorch`` (``torch.jit.trace`` + conversion) and
  ``from_exported_program`` (``torch.export.export`` + conversion);
* build time (the first call, which compiles) and latency of torch eager,
  ``torch.compile`` with inductor (if inductor cannot compile here -- no C++
  compiler or headers -- the row says n/a and why), and
  ``torch.compile(backend="relaykit", options={"targets": ["dnnl"]})`` (``--host``
  adds relaykit without oneDNN);
* the ratio of each to torch eager (median and best run; < 1 is faster than eager)
  and the largest error relative to eager's outputs.

All engines run in this one process on the same inputs with the same thread
count (``--threads``, default: all cores); runs are timed in bursts after pauses,
alternating the order of the engines (see ``_bench.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _bench

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("resnet18", "resnet50", "mobilenet_v2", "vgg11", "bert")


def load_zoo() -> Any:
    path = ROOT / "tests" / "frontend" / "pytorch" / "torch_models.py"
    spec = importlib.util.spec_from_file_location("torch_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def as_list(out: Any) -> list[np.ndarray]:
    import torch

    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    return [o.detach().numpy().copy() for o in outs]


def import_times(model: Any, args: tuple[Any, ...]) -> tuple[float, float]:
    """Seconds of trace + from_pytorch and of export + from_exported_program."""
    import torch

    from relaykit.frontend import from_exported_program, from_pytorch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        with torch.no_grad():
            traced = torch.jit.trace(model, args)
        infos = [(f"input{i}", list(a.shape)) for i, a in enumerate(args)]
        from_pytorch(traced, infos)
        ts = time.perf_counter() - t
        t = time.perf_counter()
        from_exported_program(torch.export.export(model, args))
        ep = time.perf_counter() - t
    return ts, ep


def compiled_engine(name: str, model: Any, args: tuple[Any, ...], **kwargs: Any) -> Any:
    """An engine running ``torch.compile(model, **kwargs)``; built by its first call."""
    import torch

    torch._dynamo.reset()
    compiled = torch.compile(model, **kwargs)

    def run() -> list[np.ndarray]:
        with torch.no_grad():
            return as_list(compiled(*args))

    t = time.perf_counter()
    run()
    return _bench.Engine(name, run, time.perf_counter() - t)


def engines_for(model: Any, args: tuple[Any, ...], opts: argparse.Namespace) -> list[Any]:
    import torch

    from relaykit.frontend.pytorch import dynamo  # registers backend="relaykit"

    def eager() -> list[np.ndarray]:
        with torch.no_grad():
            return as_list(model(*args))

    engines = [_bench.Engine("torch eager", eager)]
    if opts.inductor:
        try:
            engines.append(compiled_engine("inductor", model, args))
        except Exception as err:  # no compiler/headers: say so, go on
            first = (str(err).strip().splitlines() or [""])[0][:120]
            engines.append(
                _bench.Engine("inductor", eager, note=f"n/a: {type(err).__name__}: {first}")
            )
    threads = {"num_threads": opts.threads}
    with warnings.catch_warnings():
        warnings.simplefilter("error", dynamo.RelayKitFallbackWarning)
        if opts.host:
            engines.append(
                compiled_engine("relaykit host", model, args, backend="relaykit", options=threads)
            )
        engines.append(
            compiled_engine(
                "relaykit+dnnl",
                model,
                args,
                backend="relaykit",
                options={"targets": ["dnnl"], **threads},
            )
        )
    return engines


def cores_used(engine: Any, runs: int = 3) -> float:
    """CPU time / wall time over a few runs: how many cores the engine kept busy (at
    most --threads, if it keeps to its thread count)."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(runs):
        engine.run()
    return (time.process_time() - cpu) / max(time.perf_counter() - wall, 1e-9)


def report(model: str, engines: list[Any], want: list[np.ndarray]) -> None:
    base = engines[0]
    for e in engines:
        if e.note.startswith("n/a"):
            print(f"{model:<14}{e.name:<15}{'n/a':>10}{'':>45}  {e.note}")
            continue
        err = _bench.rel_error(e.run(), want)
        e.note = f"cores used {cores_used(e):.1f}  {e.note}"
        ok = "" if err <= 1e-4 else "  MISMATCH > 1e-4"
        print(
            f"{model:<14}{e.name:<15}{e.median_ms:>10.2f}{e.median_ms / base.median_ms:>8.2f}x"
            f"{e.min_ms:>9.2f}{e.min_ms / base.min_ms:>8.2f}x{err:>9.1e}{e.build_s:>9.2f}"
            f"  {e.note}{ok}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated")
    parser.add_argument("--small", action="store_true", help="the tests' small models")
    parser.add_argument("--threads", type=int, default=None, help="default: all cores")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--burst", type=int, default=5)
    parser.add_argument("--gap", type=float, default=0.5, help="pause before each burst (s)")
    parser.add_argument("--no-inductor", dest="inductor", action="store_false")
    parser.add_argument("--host", action="store_true", help="also relaykit without oneDNN")
    opts = parser.parse_args(argv)

    import torch

    opts.threads = _bench.num_threads(opts.threads)
    torch.set_num_threads(opts.threads)
    zoo = load_zoo()
    print(
        f"torch {torch.__version__}, {opts.threads} threads, {opts.runs} runs in bursts of "
        f"{opts.burst}; ratio = engine / torch eager (< 1: faster than eager)"
    )
    imports = []
    for name in opts.models.split(","):
        model, args = (zoo.small if opts.small else zoo.full_size)(name)
        ts, ep = import_times(model, args)
        imports.append((name, ts, ep))
        engines = engines_for(model, args, opts)
        timed = [e for e in engines if not e.note.startswith("n/a")]
        _bench.time_engines(timed, opts.runs, opts.burst, opts.gap)
        with torch.no_grad():
            want = as_list(model(*args))
        print(
            f"\n{'model':<14}{'engine':<15}{'median ms':>10}{'ratio':>9}{'min ms':>9}{'ratio':>9}"
            f"{'rel err':>9}{'build s':>9}"
        )
        report(name, engines, want)
        print(f"{name:<14}import: from_pytorch {ts:.2f} s, from_exported_program {ep:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
