"""``tvm.meta_schedule``: TVM's schedule search — relaykit generates no schedules.

relaykit's tuning times the algorithms of its host kernels (see
:mod:`relaykit.autotvm`) and, with several backends, where each operator runs
(:mod:`relaykit.tuning`). This module keeps the one name a model-level script hands to
those: :class:`TuneConfig` (TVM's tuning budget, which
``tvm.contrib.torch.optimize_torch(..., tuning_config=TuneConfig(...))`` reads).
Every other name raises :class:`~relaykit.errors.UnsupportedFeatureError`.

>>> TuneConfig(max_trials_global=16).max_trials_global
16
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

from relaykit.errors import UnsupportedFeatureError

__all__ = ["TuneConfig"]

INSTEAD = (
    "relaykit generates no TIR schedules to search; it tunes its host kernels' algorithms "
    "(tvm.autotvm, tvm.auto_scheduler) and backend placement (relaykit.tuning.place); "
    "tvm.contrib.torch.optimize_torch takes max_trials_global or a TuneConfig"
)


@dataclass(frozen=True)
class TuneConfig:
    """A tuning budget (TVM's fields). relaykit uses ``max_trials_global`` (how many
    kernel-algorithm measurements tuning may make in all; None: every choice); the
    search options are kept for the record and steer nothing (the spaces are a few
    algorithms per workload, measured exhaustively up to the budget)."""

    max_trials_global: int | None = None
    num_trials_per_iter: int = 64
    max_trials_per_task: int | None = None
    task_scheduler: str = "gradient"
    strategy: str = "evolutionary"
    task_scheduler_config: dict[str, Any] | None = None
    search_strategy_config: dict[str, Any] | None = None
    logger_config: dict[str, Any] | None = None
    adaptive_training: bool | None = None


def __getattr__(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.meta_schedule", name, INSTEAD)
