"""Where the latencies of candidates come from: a measured source with a tuning log, or
one a test writes.

A cost source answers ``latency(candidate, target)`` in seconds (``math.inf`` when the
target cannot run it) and ``boundary(candidate, target)``, the cost of entering and
leaving a region of ``target`` that measuring the candidate alone does not show.

>>> src = MockCostEstimator({"host": 2.0, "onnxruntime": 1.0})
>>> src.target_cost("llvm"), src.target_cost("onnxruntime")
(2.0, 1.0)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from relaykit._version import __version__
from relaykit.backends import get_backend
from relaykit.byoc.pins import HOST
from relaykit.errors import PlacementError
from relaykit.runtime.threads import resolve_num_threads

from .candidates import Candidate
from .log import MeasureKey, Record, TuningLog, machine_fingerprint
from .measure import measure_function

__all__ = [
    "CostSource",
    "MockCostEstimator",
    "CallableCost",
    "MeasuredCost",
    "Progress",
    "host_name",
]

#: TVM's names of the host target.
_HOST_ALIASES = ("host", "llvm", "c", "cpu", "default")


def host_name(target: str) -> str:
    """``"host"`` for any of the host's names, else ``target``."""
    return HOST if str(target).split(" ", 1)[0] in _HOST_ALIASES else str(target)


class CostSource(Protocol):
    """What the placement search asks of a cost source."""

    def latency(self, candidate: Candidate, target: str) -> float: ...

    def boundary(self, candidate: Candidate, target: str) -> float: ...


class MockCostEstimator:
    """TVM's ``relay.collage.MockCostEstimator``: every unit costs its target's number,
    with no measurement (``max_estimates``: fail past that many answers, 0 = no limit)."""

    def __init__(self, target_costs: Mapping[str, float], max_estimates: int = 0) -> None:
        self.target_costs = {host_name(k): float(v) for k, v in target_costs.items()}
        self.max_estimates = int(max_estimates)
        self.estimates = 0

    def target_cost(self, target: str) -> float:
        return self.target_costs.get(host_name(target), math.inf)

    def latency(self, candidate: Candidate, target: str) -> float:
        self.estimates += 1
        if self.max_estimates and self.estimates > self.max_estimates:
            raise PlacementError(f"more than {self.max_estimates} estimates were asked for")
        return self.target_cost(target) * (candidate.stop - candidate.start)

    def boundary(self, candidate: Candidate, target: str) -> float:
        return 0.0


class CallableCost:
    """Latencies from ``fn(names, target) -> seconds`` (``names``: the unit names of the
    candidate), plus ``call_cost[target]`` per region: a deterministic source for tests
    and what-if studies."""

    def __init__(
        self,
        fn: Callable[[tuple[str, ...], str], float],
        call_cost: Mapping[str, float] | None = None,
    ) -> None:
        self.fn = fn
        self.call_cost = dict(call_cost or {})
        self.calls = 0

    def latency(self, candidate: Candidate, target: str) -> float:
        self.calls += 1
        return float(self.fn(candidate.names, target))

    def boundary(self, candidate: Candidate, target: str) -> float:
        return self.call_cost.get(target, 0.0)


#: ``progress(done, total, message)``, called once per candidate and target.
Progress = Callable[[int, int, str], Any]


class MeasuredCost:
    """Latencies measured on this machine, read from and written to a :class:`TuningLog`.

    ``measurements`` counts the candidates actually built and timed (0 when the log has
    them all); ``reused`` those the log answered; a backend that fails is recorded with
    its error and answers ``inf``. With ``measure_missing=False`` (a build from a log) a
    candidate the log lacks answers ``inf`` and is counted in ``missing``, unmeasured.
    Region calls cost nothing extra: measuring a region alone already times its call.
    """

    def __init__(
        self,
        log: TuningLog | None = None,
        *,
        threads: int | None = None,
        repeat: int = 3,
        budget: float = 0.004,
        measure: Callable[..., float] = measure_function,
        measure_missing: bool = True,
    ) -> None:
        self.log = log if log is not None else TuningLog(None)
        self.threads = resolve_num_threads(threads)
        self.repeat = repeat
        self.budget = budget
        self.machine = machine_fingerprint()
        self.measure = measure
        self.measure_missing = measure_missing
        self.missing = 0
        self.measurements = 0
        self.reused = 0
        self.failures: list[Record] = []
        self._lock = threading.Lock()

    def key(self, candidate: Candidate, target: str) -> MeasureKey:
        version = __version__ if target == HOST else get_backend(target).version
        return MeasureKey(candidate.key, target, version, self.threads, self.machine)

    def latency(self, candidate: Candidate, target: str) -> float:
        key = self.key(candidate, target)
        hit = self.log.get(key)
        if hit is not None:
            self.reused += 1
            return math.inf if hit.latency is None else hit.latency
        if not self.measure_missing:
            self.missing += 1
            return math.inf
        self.measurements += 1
        try:
            seconds: float | None = self.measure(
                candidate.func, target, repeat=self.repeat, budget=self.budget
            )
            error = None
        except Exception as err:  # a backend that cannot build or run it is skipped
            seconds, error = None, f"{type(err).__name__}: {err}"
        record = Record(key, seconds, error, candidate.names)
        if error is not None:
            self.failures.append(record)
        self.log.add(record)
        return math.inf if seconds is None else seconds

    def boundary(self, candidate: Candidate, target: str) -> float:
        return 0.0
