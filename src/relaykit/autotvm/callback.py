"""``tvm.autotvm.callback``: what a tuner calls after each measurement.

>>> import io
>>> cb = log_to_file(io.StringIO())
>>> callable(cb)
True
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO, Any

from relaykit.execution.tuning import MeasureRecord

from .measure import MeasureInput, MeasureResult

__all__ = ["log_to_file", "progress_bar"]


def _record(inp: MeasureInput, res: MeasureResult) -> MeasureRecord:
    error = "" if res.error_no == 0 else str(res.costs[0])
    costs = [] if error else [float(c) for c in res.costs]
    return MeasureRecord(
        inp.task.workload.key, inp.task.name, inp.config.algorithm, costs, error, res.timestamp
    )


def log_to_file(file_out: str | IO[str], protocol: str = "json") -> Any:
    """A callback appending each measurement to ``file_out`` (a path or an open file),
    one JSON record a line: the log ``apply_history_best`` reads."""

    def callback(
        tuner: Any, inputs: Sequence[MeasureInput], results: Sequence[MeasureResult]
    ) -> None:
        lines = "".join(
            _record(i, r).to_json() + "\n" for i, r in zip(inputs, results, strict=True)
        )
        if isinstance(file_out, str):
            with open(file_out, "a") as f:
                f.write(lines)
        else:
            file_out.write(lines)

    return callback


def progress_bar(total: int, prefix: str = "", si_prefix: str = "G") -> Any:
    """A callback printing the current and best throughput and the trial count."""
    scale = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[si_prefix]
    state = {"count": 0, "cur": 0.0}

    def callback(
        tuner: Any, inputs: Sequence[MeasureInput], results: Sequence[MeasureResult]
    ) -> None:
        for inp, res in zip(inputs, results, strict=True):
            state["count"] += 1
            ok = res.error_no == 0
            state["cur"] = inp.task.flop / (sum(res.costs) / len(res.costs)) if ok else 0.0
        sys.stdout.write(
            f"\r{prefix}Current/Best: {state['cur'] / scale:7.2f}/{tuner.best_flops / scale:7.2f} "
            f"{si_prefix}FLOPS | Progress: ({state['count']}/{total})"
        )
        if state["count"] >= total:
            sys.stdout.write("\n")
        sys.stdout.flush()

    return callback
