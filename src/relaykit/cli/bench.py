"""``relaykit bench MODEL --target ...``: relaykit against the host path and onnxruntime.

Everything runs in one process on the same inputs: relaykit built for the targets,
relaykit with every operator on the host (unless ``--no-host``), and onnxruntime on the
same ONNX file when it is installed. Runs come in bursts with pauses between them, the
engines taking turns inside each burst, so that a slow spell of the machine hits all of
them alike; the table gives each engine's median and its ratio to relaykit's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from relaykit.cli._common import (
    Progress,
    SubParsers,
    artifact_signature,
    parse_pins,
    parse_shapes,
    split_targets,
)
from relaykit.cli._models import prepare_model
from relaykit.cli.compile import (
    add_model_options,
    add_target_options,
    build_prepared,
    check_targets,
    region_counts,
)
from relaykit.cli.run import positive_int, random_inputs
from relaykit.contrib.graph_executor import GraphModule
from relaykit.execution.build_module import build
from relaykit.runtime.contention import ContentionStats, adaptive_enabled, get_monitor
from relaykit.runtime.threads import available_cores

__all__ = ["register", "run", "Engine", "measure", "format_table", "busy_note"]

EPILOG = """\
examples:
  relaykit bench model.onnx --target dnnl
  relaykit bench resnet18 --target dnnl,ccompiler --bursts 5 --runs 20
  relaykit bench model.onnx --target dnnl --no-host --threads 1
"""


def register(sub: SubParsers) -> None:
    parser = sub.add_parser(
        "bench",
        help="time relaykit against the host path and onnxruntime, in one process",
        description=(
            "Build MODEL for the targets and time it against relaykit's host path and, for "
            "an ONNX file with onnxruntime installed, onnxruntime on the same inputs, in "
            "one process, in bursts with pauses; print each engine's median latency and "
            "its ratio to relaykit's, and the largest difference of their outputs."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", help="an ONNX file, a Relay text file or a built-in workload")
    add_target_options(parser)
    add_model_options(parser)
    parser.add_argument("--bursts", type=positive_int, default=5, help="bursts of runs (default 5)")
    parser.add_argument(
        "--runs", type=positive_int, default=10, help="runs per engine per burst (10)"
    )
    parser.add_argument(
        "--pause", type=float, default=0.5, help="seconds between bursts (default 0.5)"
    )
    parser.add_argument(
        "--no-host", action="store_true", help="do not time relaykit's host-only build"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="onnxruntime's intra-op threads (default 0: its own choice)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.set_defaults(func=run)


@dataclass
class Engine:
    """One way of running the model: a name, a function running it once, and what it
    returned for the inputs."""

    name: str
    run_once: Callable[[], Any]
    outputs: list[np.ndarray] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times) * 1000.0


def relaykit_engine(name: str, lib: Any, inputs: dict[str, np.ndarray]) -> Engine:
    module = GraphModule(lib["default"]())
    if inputs:
        module.set_input(**inputs)
    module.run()
    outs = [module.get_output(i).numpy() for i in range(module.get_num_outputs())]
    return Engine(name, module.run, outs)


def onnxruntime_engine(path: str, inputs: dict[str, np.ndarray], threads: int) -> Engine | str:
    """onnxruntime on ``path``; a string saying why not when it cannot run."""
    try:
        import onnxruntime as ort  # an optional extra: asked for only here
    except ImportError:
        return "onnxruntime is not installed (pip install 'relaykit[test]' or onnxruntime)"
    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
    try:
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        feed = {i.name: inputs[i.name] for i in session.get_inputs() if i.name in inputs}
        outs = [np.asarray(o) for o in session.run(None, feed)]
    except Exception as err:  # onnxruntime's own errors have no common base class
        return f"onnxruntime cannot run this model: {_one_line(str(err)) or type(err).__name__}"
    return Engine("onnxruntime", lambda: session.run(None, feed), outs)


def _one_line(message: str, limit: int = 600) -> str:
    """``message`` on one line, whole: onnxruntime spreads one sentence over several
    lines ("... for the following indices\n index: 0 Got: 3 Expected: 1\n Please fix
    ..."). Only a message longer than ``limit`` is shortened, at a word, and says so."""
    text = " ".join(message.split())
    if len(text) <= limit:
        return text
    shown = text[:limit].rsplit(" ", 1)[0]
    return f"{shown} ... ({len(text) - len(shown)} more characters)"


def measure(engines: list[Engine], bursts: int, runs: int, pause: float) -> None:
    """Time every engine: ``bursts`` bursts of ``runs`` runs each, the engines taking
    turns (in a rotating order) inside each burst, ``pause`` seconds between bursts."""
    for engine in engines:
        engine.run_once()  # warm-up
    for b in range(bursts):
        order = engines[b % len(engines) :] + engines[: b % len(engines)]
        for engine in order:
            for _ in range(runs):
                t0 = time.perf_counter()
                engine.run_once()
                engine.times.append(time.perf_counter() - t0)
        if b + 1 < bursts and pause > 0:
            time.sleep(pause)


def _max_diff(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    diffs = [
        float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64))))
        for x, y in zip(a, b, strict=False)
        if x.shape == y.shape and x.size
    ]
    return max(diffs, default=0.0)


def format_table(engines: list[Engine]) -> str:
    """Median latency and ratio to the first engine (relaykit), one line per engine."""
    base = engines[0]
    width = max(len(e.name) for e in engines)
    lines = [f"{'engine':<{width}}  {'median (ms)':>11}  {'vs first':>8}  {'max |diff|':>10}"]
    for e in engines:
        ratio = e.median_ms / base.median_ms if base.median_ms > 0 else float("nan")
        diff = "-" if e is base else f"{_max_diff(base.outputs, e.outputs):.2e}"
        lines.append(f"{e.name:<{width}}  {e.median_ms:>11.4f}  {ratio:>7.2f}x  {diff:>10}")
    return "\n".join(lines)


def busy_note(
    load: float, cores: int, stats: ContentionStats, enabled: bool, others: float | None = None
) -> str:
    """One line: the machine's load while timing (``others``: cores' worth of CPU other
    processes used, when measured) and what relaykit did about it."""
    head = f"machine: load {load:.1f} (1-minute average) on {cores} cores"
    if others is not None:
        head += f", other processes using {others:.1f} of them"
    if stats.windows:
        head += f"; relaykit's threads waited for a core {stats.wait_share:.0%} of their time"
    if not enabled:
        return head + "; contention handling off (RELAYKIT_DNNL_ADAPTIVE=0)"
    if stats.region_calls:
        what = "busy" if stats.serial_calls else "no switch needed"
        return (
            f"{head}; {what}: dnnl regions ran their one-thread build in "
            f"{stats.serial_calls} of {stats.region_calls} calls"
        )
    return head


def run(args: argparse.Namespace) -> int:
    targets = split_targets(args.target)
    shapes = parse_shapes(args.input_shapes)
    progress = Progress()
    check_targets(targets)
    model = prepare_model(
        args.model,
        targets,
        batch=args.batch,
        image_size=args.image_size,
        shapes=shapes or None,
        limit=args.max_file_size,
        pins=parse_pins(args.pin, targets),
        min_ops=args.min_ops,
        progress=progress,
    )
    lib = build_prepared(model.prepared, progress)
    mod, part, what = model.prepared.source, model.prepared.partitioned, model.what
    specs, _ = artifact_signature(lib)
    inputs = random_inputs(specs, args.seed)
    label = f"relaykit {'+'.join(targets) or 'host'}"
    engines = [relaykit_engine(label, lib, inputs)]
    if targets and not args.no_host:  # with --target host, the first build is the host's
        with progress.step("build for the host only"):
            host = build(mod, target="llvm")
        engines.append(relaykit_engine("relaykit host", host, inputs))
    notes = []
    if Path(args.model).suffix.lower() == ".onnx":
        ort = onnxruntime_engine(args.model, inputs, args.threads)
        if isinstance(ort, str):
            notes.append(ort)
        else:
            engines.append(ort)
    else:
        notes.append("onnxruntime runs ONNX files only; give an .onnx model to compare with it")
    regions = region_counts(part)
    placed = ", ".join(f"{n} on {t}" for t, n in regions.items()) or "none offloaded"
    print(f"{what}: regions {placed}; inputs random (seed {args.seed})")
    print(f"{args.bursts} bursts x {args.runs} runs per engine, {args.pause:g} s pauses")
    before = get_monitor().stats.copy()
    with progress.step("measure"):
        measure(engines, args.bursts, args.runs, args.pause)
    print(format_table(engines))
    stats = get_monitor().stats.since(before)
    monitor = get_monitor()
    others = monitor.machine.others
    print(busy_note(os.getloadavg()[0], available_cores(), stats, adaptive_enabled(), others))
    for note in notes:
        print(f"note: {note}")
    return 0
