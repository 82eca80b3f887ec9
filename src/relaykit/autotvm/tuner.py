"""``tvm.autotvm.tuner``: tuners that measure a task's configurations.

Every tuner visits configurations of the task's space, measures each (build the
operator alone with it, time it), calls the callbacks with the inputs and results,
and keeps the best. relaykit's spaces are small (the algorithms of one host
kernel), so the tuners differ only in the order they visit them: grid order,
random order, or (``XGBTuner``, ``GATuner``) the configurations the heuristic
would not pick first; their model options are accepted and not needed.

>>> from relaykit import relay
>>> from relaykit.autotvm import task, measure_option, LocalRunner
>>> mod, params = relay.testing.mlp.get_workload(batch_size=1)
>>> t = task.extract_from_program(mod["main"], params=params)[0]
>>> tuner = GridSearchTuner(t)
>>> tuner.tune(n_trial=5, measure_option=measure_option(runner=LocalRunner(number=1, repeat=1)))
>>> tuner.best_config.algorithm, tuner.best_flops > 0
('gemm', True)
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from relaykit.errors import ArgumentError
from relaykit.execution.tuning import MeasureRecord, measure

from .measure import MeasureErrorNo, MeasureInput, MeasureResult
from .task import ConfigEntity, Task

__all__ = ["Tuner", "GridSearchTuner", "RandomTuner", "GATuner", "XGBTuner"]

Callback = Callable[["Tuner", Sequence[MeasureInput], Sequence[MeasureResult]], None]


class Tuner:
    """Measures configurations of ``task`` in the order :meth:`order` gives."""

    def __init__(self, task: Task, **kwargs: Any) -> None:
        if not isinstance(task, Task):
            raise ArgumentError(f"a tuner takes an autotvm Task, got {type(task).__name__}")
        self.task = task
        self.best_config: ConfigEntity | None = None
        self.best_flops = 0.0
        self.best_measure_pair: tuple[MeasureInput, MeasureResult] | None = None
        self.records: list[MeasureRecord] = []

    def order(self) -> list[int]:
        """The indices of the space, in the order this tuner visits them."""
        return list(range(len(self.task.config_space)))

    def tune(
        self,
        n_trial: int,
        measure_option: dict[str, Any] | None = None,
        early_stopping: int | None = None,
        callbacks: Iterable[Callback] = (),
        si_prefix: str = "G",
    ) -> None:
        """Measure up to ``n_trial`` configurations (stop after ``early_stopping`` without
        improvement); each result goes to every callback."""
        options = measure_option or globals()["measure_option"]()
        runner = options["runner"]
        callbacks = list(callbacks)
        since_best = 0
        for trial, index in enumerate(self.order()):
            if trial >= n_trial or (early_stopping is not None and since_best >= early_stopping):
                break
            config = self.task.config_space.get(index)
            start = time.time()
            rec = measure(
                self.task.workload,
                config.algorithm,
                self.task.name,
                runner.number,
                runner.repeat,
                runner.min_repeat_ms,
            )
            self.records.append(rec)
            error = MeasureErrorNo.RUNTIME_DEVICE if rec.error else MeasureErrorNo.NO_ERROR
            costs: tuple[Any, ...] = tuple(rec.costs) if rec.costs else (rec.error,)
            inp = MeasureInput(self.task.target, self.task, config)
            res = MeasureResult(costs, error, time.time() - start, rec.timestamp)
            since_best += 1
            if not rec.error and self.task.flop / rec.mean > self.best_flops:
                self.best_flops = self.task.flop / rec.mean
                self.best_config, self.best_measure_pair, since_best = config, (inp, res), 0
            for callback in callbacks:
                callback(self, [inp], [res])


class GridSearchTuner(Tuner):
    """Visits the space in its order."""


class RandomTuner(Tuner):
    """Visits the space in a random order (``range_idx`` limits it to a slice)."""

    def __init__(self, task: Task, range_idx: tuple[int, int] | None = None, **kwargs: Any) -> None:
        super().__init__(task)
        self.range_idx = range_idx

    def order(self) -> list[int]:
        lo, hi = self.range_idx or (0, len(self.task.config_space) - 1)
        indices = list(range(lo, hi + 1))
        random.shuffle(indices)
        return indices


class GATuner(Tuner):
    """TVM's genetic-algorithm tuner; over relaykit's small spaces it visits every
    configuration, ``pop_size``/``elite_num``/``mutation_prob`` accepted."""

    def __init__(
        self, task: Task, pop_size: int = 100, elite_num: int = 3, mutation_prob: float = 0.1
    ) -> None:
        if pop_size < 1 or elite_num > pop_size:
            raise ArgumentError(
                f"GATuner needs 1 <= elite_num <= pop_size, got {elite_num}, {pop_size}"
            )
        super().__init__(task)


_LOSS = ("reg", "rank", "rank-binary")
_FEATURES = ("itervar", "knob", "curve")


class XGBTuner(Tuner):
    """TVM's cost-model tuner; over relaykit's small spaces it measures every
    configuration instead of modelling them (no xgboost needed)."""

    def __init__(
        self,
        task: Task,
        plan_size: int = 64,
        feature_type: str = "itervar",
        loss_type: str = "reg",
        num_threads: int | None = None,
        **kwargs: Any,
    ) -> None:
        if loss_type not in _LOSS or feature_type not in _FEATURES:
            raise ArgumentError(
                f"XGBTuner(loss_type={loss_type!r}, feature_type={feature_type!r}): "
                f"loss_type is one of {_LOSS}, feature_type one of {_FEATURES}"
            )
        super().__init__(task)
