"""``tvm.autotvm``: tune the algorithms of relaykit's host kernels, under TVM's names.

TVM's AutoTVM searches schedule templates; relaykit has none, so a task's space
is the algorithms its host kernel has (``nn.conv2d``: im2col + GEMM or Winograd
where it applies). The flow of a TVM script works: ``task.extract_from_program``,
a tuner's ``tune`` with ``measure_option`` and ``callback.log_to_file``, then
``with apply_history_best(log):`` around ``relay.build``, which builds each
workload with its fastest measured algorithm. Schedule templates
(``template``, ``register_topi_compute``...) raise
:class:`~relaykit.errors.UnsupportedFeatureError`.

>>> from relaykit import autotvm
>>> hasattr(autotvm, "register_topi_compute")
False
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from types import TracebackType
from typing import NoReturn

from relaykit.errors import ArgumentError, UnsupportedFeatureError
from relaykit.execution.kernel_choices import use_choices
from relaykit.execution.tuning import MeasureRecord, best_choices, load_records

from . import callback, graph_tuner, measure, record, task, tuner
from .measure import LocalBuilder, LocalRunner, MeasureInput, MeasureResult, measure_option

__all__ = [
    "ApplyHistoryBest",
    "LocalBuilder",
    "LocalRunner",
    "MeasureInput",
    "MeasureResult",
    "apply_history_best",
    "callback",
    "graph_tuner",
    "measure",
    "measure_option",
    "record",
    "task",
    "tuner",
]

INSTEAD = (
    "relaykit has no schedule templates; autotvm here tunes the host kernels' algorithms "
    "(task.extract_from_program, a tuner, apply_history_best)"
)


class ApplyHistoryBest:
    """Inside ``with``, builds use the fastest measured choice of each workload in
    ``records`` (a log path, or records)."""

    def __init__(self, records: str | os.PathLike[str] | Iterable[MeasureRecord]) -> None:
        if isinstance(records, (str, os.PathLike)):
            if not os.path.isfile(records):
                raise ArgumentError(
                    f"apply_history_best: no tuning log at {os.fspath(records)!r}; run a tuner "
                    "with "
                    "callbacks=[autotvm.callback.log_to_file(path)] first"
                )
            records = load_records(os.fspath(records))
        self.best = best_choices(records)
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> ApplyHistoryBest:
        self._stack.enter_context(use_choices(self.best))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stack.close()


def apply_history_best(
    records: str | os.PathLike[str] | Iterable[MeasureRecord],
) -> ApplyHistoryBest:
    """TVM's name for :class:`ApplyHistoryBest`."""
    return ApplyHistoryBest(records)


#: what to say for the names that measure on another machine
REMOTE_INSTEAD = (
    "measuring on a remote device over RPC is out of scope: relaykit builds for and measures "
    "on the host it runs on; use autotvm.LocalRunner(number, repeat, ...) on the target machine"
)


def __getattr__(name: str) -> NoReturn:
    remote = name.startswith("RPC") or name == "request_remote"
    raise UnsupportedFeatureError.for_name(
        "tvm.autotvm", name, REMOTE_INSTEAD if remote else INSTEAD
    )
