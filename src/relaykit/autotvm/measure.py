"""``tvm.autotvm.measure``: how candidates are built and timed.

relaykit builds and times each candidate in this process (its kernels are
compiled ahead of time), so ``LocalBuilder`` only names the build function and
``LocalRunner`` carries the timing options.

>>> opt = measure_option(builder=LocalBuilder(), runner=LocalRunner(number=2, repeat=3))
>>> opt["runner"].number, opt["runner"].repeat
(2, 3)
"""

from __future__ import annotations

from typing import Any, NamedTuple

from relaykit.errors import ArgumentError

__all__ = [
    "LocalBuilder",
    "LocalRunner",
    "MeasureInput",
    "MeasureResult",
    "MeasureErrorNo",
    "measure_option",
]


class MeasureErrorNo:
    """TVM's error codes of a measurement (0: none)."""

    NO_ERROR = 0
    RUNTIME_DEVICE = 4


class MeasureInput(NamedTuple):
    """What was measured: the target, the task and the configuration."""

    target: Any
    task: Any
    config: Any


class MeasureResult(NamedTuple):
    """Its result: ``costs`` in seconds, ``error_no`` (0 when it ran), the total time and
    when it was measured."""

    costs: tuple[Any, ...]  # seconds, or the error message when error_no != 0
    error_no: int
    all_cost: float
    timestamp: float


class LocalBuilder:
    """Builds each candidate in this process (``build_func`` must be ``"default"``)."""

    def __init__(
        self, timeout: float = 10, n_parallel: int | None = None, build_func: str = "default"
    ) -> None:
        if build_func != "default":
            raise ArgumentError(
                f"LocalBuilder(build_func={build_func!r}): relaykit builds candidates with its own "
                "build; leave build_func as 'default'"
            )
        self.timeout = timeout
        self.n_parallel = n_parallel


class LocalRunner:
    """Times each candidate: ``repeat`` costs, each the mean of ``number`` runs (run more
    while under ``min_repeat_ms``). ``timeout``, ``cooldown_interval`` and
    ``enable_cpu_cache_flush`` are accepted for TVM scripts; the last is not done."""

    def __init__(
        self,
        timeout: float = 10,
        number: int = 4,
        repeat: int = 3,
        min_repeat_ms: float = 0,
        cooldown_interval: float = 0.1,
        enable_cpu_cache_flush: bool = False,
        **kwargs: Any,
    ) -> None:
        if number < 1 or repeat < 1:
            raise ArgumentError(
                f"LocalRunner needs number >= 1 and repeat >= 1, got {number}, {repeat}"
            )
        self.timeout = timeout
        self.number = number
        self.repeat = repeat
        self.min_repeat_ms = min_repeat_ms
        self.cooldown_interval = cooldown_interval
        self.enable_cpu_cache_flush = enable_cpu_cache_flush


def measure_option(builder: Any = None, runner: Any = None) -> dict[str, Any]:
    """The measurement options a tuner's ``tune`` takes."""
    builder = LocalBuilder() if builder is None or builder == "local" else builder
    runner = LocalRunner() if runner is None or runner == "local" else runner
    if not isinstance(runner, LocalRunner):
        raise ArgumentError(
            f"measure_option: runner must be an autotvm.LocalRunner, got {type(runner).__name__} "
            "(relaykit measures on this machine only; RPC runners are out of its scope)"
        )
    return {"builder": builder, "runner": runner}
