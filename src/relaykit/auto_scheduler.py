"""``tvm.auto_scheduler``: TVM's auto-scheduler names over relaykit's kernel tuning.

TVM's auto-scheduler (Ansor) generates schedules; relaykit has none, so a search
task is one operator workload whose space is its host kernel's algorithms (as in
:mod:`relaykit.autotvm`). ``extract_tasks``, ``TaskScheduler(...).tune`` with
``TuningOptions`` and ``RecordToFile``, and ``with ApplyHistoryBest(log):`` around
``relay.build`` work; sketch policies and cost models are accepted and not needed.

>>> from relaykit import relay
>>> mod, params = relay.testing.mlp.get_workload(batch_size=1)
>>> tasks, weights = extract_tasks(mod["main"], params, "llvm")
>>> len(tasks), weights
(3, [1, 1, 1])
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, NoReturn

from relaykit.errors import ArgumentError, UnsupportedFeatureError
from relaykit.execution.kernel_choices import use_choices
from relaykit.execution.tuning import (
    MeasureRecord,
    Workload,
    best_choices,
    extract_workloads,
    load_records,
    measure,
)

__all__ = [
    "SearchTask",
    "ComputeDAG",
    "TaskScheduler",
    "TuningOptions",
    "LocalRunner",
    "LocalBuilder",
    "RecordToFile",
    "ApplyHistoryBest",
    "SketchPolicy",
    "XGBModel",
    "RandomModel",
    "extract_tasks",
    "load_records",
]

INSTEAD = (
    "relaykit generates no schedules; auto_scheduler here tunes the host kernels' algorithms "
    "(extract_tasks, TaskScheduler, ApplyHistoryBest)"
)


class ComputeDAG:
    """What a task computes, printable (the operator, its inputs and attributes)."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload

    def __str__(self) -> str:
        lines = [f"{self.workload.op}("]
        lines += [
            f"  arg{i}: Tensor[{shape}, {dtype}],"
            for i, (shape, dtype) in enumerate(self.workload.inputs)
        ]
        attrs = ", ".join(f"{k}={v}" for k, v in self.workload.attrs.items())
        lines.append(f"  {attrs})" if attrs else ")")
        lines.append(f"choices: {', '.join(self.workload.candidates)}")
        return "\n".join(lines)


class SearchTask:
    """One workload to tune: ``workload_key``, ``compute_dag``, ``desc``, ``target``."""

    def __init__(self, workload: Workload, target: Any = "llvm", desc: str = "") -> None:
        self.workload = workload
        self.workload_key = workload.key
        self.compute_dag = ComputeDAG(workload)
        self.target = target
        self.desc = desc or workload.op

    def __repr__(self) -> str:
        return f"SearchTask({self.desc}, workload_key={self.workload_key})"


def extract_tasks(
    mod: Any, params: Mapping[str, Any] | None, target: Any = "llvm", **kwargs: Any
) -> tuple[list[SearchTask], list[int]]:
    """The tasks of ``mod`` (an IRModule or its ``main``) and each one's number of uses."""
    workloads = extract_workloads(mod, params)
    return [SearchTask(w, target) for w in workloads], [w.uses for w in workloads]


class LocalRunner:
    """Timing options: ``repeat`` costs, each the mean of ``number`` runs."""

    def __init__(
        self,
        timeout: float = 10,
        number: int = 3,
        repeat: int = 1,
        min_repeat_ms: float = 100,
        cooldown_interval: float = 0.0,
        enable_cpu_cache_flush: bool = False,
    ) -> None:
        if number < 1 or repeat < 1:
            raise ArgumentError(
                f"LocalRunner needs number >= 1 and repeat >= 1, got {number}, {repeat}"
            )
        self.number, self.repeat, self.min_repeat_ms = number, repeat, min_repeat_ms
        self.timeout = timeout


class LocalBuilder:
    """Accepted for TVM scripts: candidates are built in this process."""

    def __init__(
        self, timeout: float = 15, n_parallel: int | None = None, build_func: str = "default"
    ) -> None:
        self.timeout, self.n_parallel, self.build_func = timeout, n_parallel, build_func


class RecordToFile:
    """A measure callback appending each measurement to ``filename`` (JSON lines)."""

    def __init__(self, filename: str) -> None:
        self.filename = filename

    def __call__(self, records: Sequence[MeasureRecord]) -> None:
        with open(self.filename, "a") as f:
            f.writelines(r.to_json() + "\n" for r in records)


class TuningOptions:
    """How much to measure (``num_measure_trials`` in all), how, and what to call after."""

    def __init__(
        self,
        num_measure_trials: int = 0,
        runner: Any = "local",
        builder: Any = "local",
        measure_callbacks: Iterable[Any] | None = None,
        verbose: int = 1,
        **kwargs: Any,
    ) -> None:
        self.num_measure_trials = num_measure_trials
        self.runner = LocalRunner() if runner == "local" else runner
        self.builder = builder
        self.measure_callbacks = list(measure_callbacks or [])
        self.verbose = verbose


class SketchPolicy:
    """Accepted for TVM scripts (relaykit's spaces are enumerated, not searched)."""

    def __init__(self, task: SearchTask, program_cost_model: Any = None, **kwargs: Any) -> None:
        self.task = task


class XGBModel:
    """Accepted for TVM scripts (no cost model is needed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


class RandomModel(XGBModel):
    """Accepted for TVM scripts (no cost model is needed)."""


class TaskScheduler:
    """Measures the tasks' choices, the most used tasks first, up to the trial budget."""

    def __init__(
        self,
        tasks: Sequence[SearchTask],
        task_weights: Sequence[float] | None = None,
        **kwargs: Any,
    ) -> None:
        self.tasks = list(tasks)
        self.task_weights = (
            list(task_weights) if task_weights is not None else [1] * len(self.tasks)
        )
        if len(self.task_weights) != len(self.tasks):
            raise ArgumentError(
                f"TaskScheduler: {len(self.tasks)} tasks but {len(self.task_weights)} weights"
            )
        self.records: list[MeasureRecord] = []

    def tune(self, tune_option: TuningOptions, search_policy: Any = None, **kwargs: Any) -> None:
        """Measure each task's choices until ``num_measure_trials`` measurements."""
        runner = tune_option.runner
        order = sorted(range(len(self.tasks)), key=lambda i: -self.task_weights[i])
        budget = tune_option.num_measure_trials
        for i in order:
            for choice in self.tasks[i].workload.candidates:
                if budget <= 0:
                    return
                budget -= 1
                rec = measure(
                    self.tasks[i].workload,
                    choice,
                    self.tasks[i].desc,
                    runner.number,
                    runner.repeat,
                    runner.min_repeat_ms,
                )
                self.records.append(rec)
                for cb in tune_option.measure_callbacks:
                    cb([rec])
                if tune_option.verbose:
                    sys.stdout.write(f"task {i} {choice}: {rec.mean * 1e3:.3f} ms\n")


class ApplyHistoryBest:
    """Inside ``with``, builds use the fastest measured choice of each workload of the
    log (a missing log applies nothing, with a warning, as TVM reads it as empty)."""

    def __init__(
        self, records: str | os.PathLike[str] | Iterable[MeasureRecord], **kwargs: Any
    ) -> None:
        if isinstance(records, (str, os.PathLike)):
            path = os.fspath(records)
            if os.path.isfile(path):
                records = load_records(path)
            else:
                warnings.warn(
                    f"ApplyHistoryBest: no tuning log at {path!r}; nothing is applied", stacklevel=2
                )
                records = []
        self._choices = use_choices(best_choices(records))

    def __enter__(self) -> ApplyHistoryBest:
        self._choices.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._choices.__exit__(kind, value, tb)


def __getattr__(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.auto_scheduler", name, INSTEAD)
