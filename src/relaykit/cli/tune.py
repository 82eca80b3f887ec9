"""``relaykit tune MODEL --targets dnnl,onnxruntime --log tune.jsonl``: measured placement.

Every candidate region of the model is measured on each target that can run it (and
on the host), the placement of least total latency is chosen, and every measurement
is appended to the tuning log; measurements already in the log are reused, so a
second tune measures nothing. ``relaykit compile MODEL --targets ... --tuning-log
tune.jsonl`` then builds that placement.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

from relaykit.cli._common import SubParsers, split_targets, targets_label
from relaykit.cli._models import MODEL_HELP, load_for_build
from relaykit.cli.compile import add_model_options
from relaykit.errors import PlacementError, UsageError
from relaykit.runtime.threads import set_num_threads
from relaykit.tuning import (
    CollageResult,
    MeasuredCost,
    TuningLog,
    check_placement_targets,
    place,
    placement_table,
    search,
)

__all__ = ["register", "run", "tune_model", "summary_table", "ProgressBar", "checked_targets"]

EPILOG = """\
examples:
  relaykit tune resnet18 --targets dnnl,onnxruntime,ccompiler --log tune.jsonl
  relaykit tune model.onnx --targets onnxruntime --log tune.jsonl --threads 2
  relaykit tune resnet50 --targets dnnl,onnxruntime --log tune.jsonl --ray-address 10.0.0.1:6379
  relaykit compile resnet18 --targets dnnl,onnxruntime,ccompiler --tuning-log tune.jsonl
"""


def register(sub: SubParsers) -> None:
    parser = sub.add_parser(
        "tune",
        help="measure candidate regions on each backend and choose the fastest placement",
        description=(
            "Measure MODEL's candidate regions on every target that can run them and on "
            "the host, choose the placement of least total latency, and append every "
            "measurement to the tuning log (those already there are reused)."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", help=MODEL_HELP)
    add_placement_options(parser)
    parser.add_argument(
        "--ray-address",
        default=None,
        metavar="HOST:PORT",
        help="measure as tasks on this Ray cluster (the relaykit[ray] extra); "
        "default: local worker processes, each pinned to its own cores",
    )
    parser.add_argument(
        "--log",
        required=True,
        metavar="FILE",
        help="the tuning log (JSON lines) to read and extend",
    )
    add_model_options(parser)
    parser.set_defaults(func=run)


def add_placement_options(parser: argparse.ArgumentParser) -> None:
    """``--targets``, ``--threads``, ``--max-units``, ``--host-max-units``, ``--any-machine``."""
    parser.add_argument(
        "--targets",
        "--target",
        dest="target",
        action="append",
        required=True,
        metavar="T[,T...]",
        help="backends to place regions on (comma-separated or repeated); the host is always one",
    )
    parser.add_argument("--threads", type=int, default=None, help="thread budget while measuring")
    parser.add_argument(
        "--max-units", type=int, default=8, metavar="N", help="largest backend region measured"
    )
    parser.add_argument(
        "--host-max-units", type=int, default=4, metavar="N", help="largest host run measured"
    )
    parser.add_argument(
        "--any-machine",
        action="store_true",
        help="reuse log lines measured on another machine too",
    )


def checked_targets(values: list[str]) -> list[str]:
    """The ``--targets`` list, each a known and available backend (a usage error if not)."""
    targets = split_targets(values)
    try:
        return list(check_placement_targets(targets))
    except PlacementError as err:
        raise UsageError(f"--targets: {err}") from err


class ProgressBar:
    """``[#####-----] 12/40 label`` on one terminal line; silent when not a terminal."""

    def __init__(self, stream: IO[str] | None = None, width: int = 30) -> None:
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty())
        self.width = width

    def __call__(self, done: int, total: int, label: str) -> None:
        if not self.enabled or total <= 0:
            return
        filled = self.width * done // total
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\r[{bar}] {done}/{total} {label[:40]:<40}")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


def summary_table(result: CollageResult, singles: dict[str, float]) -> str:
    """The chosen regions, their time on each target and why, and single-target totals."""
    return placement_table(result, singles)


def tune_model(
    mod: Any,
    targets: list[str],
    log: TuningLog,
    *,
    threads: int | None = None,
    max_units: int = 8,
    host_max_units: int = 4,
    progress: Any = None,
    ray_address: str | None = None,
) -> tuple[CollageResult, MeasuredCost, dict[str, float]]:
    """Place ``mod`` by measurement (in local workers, or on the Ray cluster at
    ``ray_address``); also the best placement using each target alone with the host,
    from the same measurements (runs the joint search skipped count as unmeasured)."""
    cost = MeasuredCost(log, threads=threads, ray_address=ray_address)
    try:
        result = place(
            mod,
            targets,
            cost=cost,
            max_units=max_units,
            host_max_units=host_max_units,
            progress=progress,
        )
    finally:
        cost.close()
    recorded = MeasuredCost(log, threads=threads, measure_missing=False)
    singles = {}
    for t in targets:
        alone = search(
            result.graph,
            [t],
            recorded,
            max_units=max_units,
            host_max_units=host_max_units,
        )
        singles[t] = alone.total
    return result, cost, singles


def run(args: argparse.Namespace) -> int:
    targets = checked_targets(args.target)
    if args.threads is not None:
        set_num_threads(args.threads)
    log = TuningLog(args.log, any_machine=args.any_machine)
    mod, what = load_for_build(args.model, args.batch, args.image_size, limit=args.max_file_size)
    result, cost, singles = tune_model(
        mod,
        targets,
        log,
        threads=args.threads,
        max_units=args.max_units,
        host_max_units=args.host_max_units,
        progress=ProgressBar(),
        ray_address=args.ray_address,
    )
    print(
        f"tuned {what} for {targets_label(targets)}: {len(result.graph.units)} units, "
        f"{cost.measurements} measured, {cost.reused} from the log, "
        f"{len(cost.failures)} failed"
    )
    print(summary_table(result, singles))
    print(f"log: {args.log} ({len(log)} records)")
    return 0
