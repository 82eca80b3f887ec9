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

import hashlib
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from relaykit._version import __version__
from relaykit.backends import get_backend
from relaykit.byoc.pins import HOST
from relaykit.errors import PlacementError
from relaykit.ir.expr import Call
from relaykit.ir.functor import post_order
from relaykit.ir.json_save import save_json
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.runtime.threads import resolve_num_threads

from .candidates import Candidate
from .log import MeasureKey, Record, TuningLog, machine_fingerprint
from .ray_cluster import RayWorkers
from .workers import InProcess, Job, LocalWorkers, Pool

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

    def estimate(self, mod: IRModule, target: Any) -> float:
        """TVM's estimate of a module cut out by Collage's search: each operator call of
        each function costs the target's number, times 0.9 for every call before it in
        the same function (the benefit of fusing them)."""
        self.estimates += 1
        if self.max_estimates and self.estimates > self.max_estimates:
            raise PlacementError(
                f"more than {self.max_estimates} distinct candidates were estimated"
            )
        name = str(getattr(getattr(target, "kind", None), "name", target))
        op_cost = self.target_cost(name)
        total = 0.0
        for _, fn in mod.items():
            calls = sum(
                1 for n in post_order(fn.body) if isinstance(n, Call) and isinstance(n.op, Op)
            )
            total += sum(op_cost * FUSION_BENEFIT**k for k in range(calls))
        return total


#: How much cheaper each further operator call of one function is in ``estimate``.
FUSION_BENEFIT = 0.9


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


#: Seconds of timed runs (at least one) per whole model in each interleaved round.
MODULE_BUDGET = 0.1


class MeasuredCost:
    """Latencies measured on this machine (or a Ray cluster), read from and written to a
    :class:`TuningLog`.

    ``measurements`` counts the candidates actually built and timed (0 when the log has
    them all); ``reused`` those the log answered; a backend that fails is recorded with
    its error and answers ``inf``. With ``measure_missing=False`` (a build from a log) a
    candidate the log lacks answers ``inf`` and is counted in ``missing``, unmeasured.
    Region calls cost nothing extra: measuring a region alone already times its call.

    Where jobs run: ``measure`` (a callable ``(func, target, repeat=, budget=)``, for
    tests) runs them in this process; else ``ray_address`` sends them to a Ray cluster
    (:class:`.ray_cluster.RayWorkers`); else local worker processes pinned to their own
    cores (:class:`.workers.LocalWorkers`; ``workers=0`` measures in this process).
    :meth:`latencies` measures a batch at once; :meth:`close` stops the workers.
    """

    def __init__(
        self,
        log: TuningLog | None = None,
        *,
        threads: int | None = None,
        repeat: int = 3,
        budget: float = 0.004,
        measure: Callable[..., float] | None = None,
        measure_missing: bool = True,
        workers: int | None = None,
        ray_address: str | None = None,
    ) -> None:
        self.log = log if log is not None else TuningLog(None)
        self.threads = resolve_num_threads(threads)
        self.repeat = repeat
        self.budget = budget
        self.machine = machine_fingerprint()
        self.measure = measure
        self.measure_missing = measure_missing
        self.workers = workers
        self.ray_address = ray_address
        self.missing = 0
        self.measurements = 0
        self.reused = 0
        self.lost = 0
        self.failures: list[Record] = []
        self._pool: Pool | None = None
        self._lock = threading.Lock()

    def key(self, candidate: Candidate, target: str) -> MeasureKey:
        version = __version__ if target == HOST else get_backend(target).version
        return MeasureKey(candidate.key, target, version, self.threads, self.machine)

    def pool(self) -> Pool:
        """Where this source's jobs run (made on first use)."""
        if self._pool is None:
            if self.ray_address is not None:
                self._pool = RayWorkers(self.ray_address, self.threads)
            elif self.workers == 0:
                self._pool = InProcess()
            else:
                self._pool = LocalWorkers(self.threads, self.workers)
        return self._pool

    def _measure_here(self, cand: Candidate, target: str) -> dict[str, Any]:
        assert self.measure is not None
        try:
            seconds = self.measure(cand.func, target, repeat=self.repeat, budget=self.budget)
        except Exception as err:  # a backend that cannot build or run it is skipped
            return {"latency": None, "error": f"{type(err).__name__}: {err}"}
        return {"latency": seconds, "error": None}

    def latency(self, candidate: Candidate, target: str) -> float:
        return self.latencies([(candidate, target, math.inf)])[0]

    def latencies(self, jobs: Sequence[tuple[Candidate, str, float]]) -> list[float]:
        """Seconds for each ``(candidate, target, bound)``: from the log, else measured
        (all missing ones as one batch, each distinct region and target once; ``bound``
        is the best time known for the same units, past which measuring stops early)."""
        answers: dict[MeasureKey, float] = {}
        todo: dict[MeasureKey, tuple[Candidate, str, float]] = {}
        keys = []
        for cand, target, bound in jobs:
            key = self.key(cand, target)
            keys.append(key)
            if key in answers or key in todo:
                continue
            hit = self.log.get(key)
            if hit is not None:
                self.reused += 1
                answers[key] = math.inf if hit.latency is None else hit.latency
            elif not self.measure_missing:
                self.missing += 1
                answers[key] = math.inf
            else:
                todo[key] = (cand, target, bound)
        if todo:
            answers.update(self._run(todo))
        return [answers[k] for k in keys]

    def _run(self, todo: dict[MeasureKey, tuple[Candidate, str, float]]) -> dict[MeasureKey, float]:
        if self.measure is not None:
            results = [self._measure_here(c, t) for c, t, _ in todo.values()]
        else:
            specs = [
                Job(save_json(c.func), t, self.threads, self.repeat, self.budget, b)
                for c, t, b in todo.values()
            ]
            results = self.pool().map(specs)
        out: dict[MeasureKey, float] = {}
        for (key, (cand, _, _)), res in zip(todo.items(), results, strict=True):
            if "lost" in res:  # the worker or node died: not measured, not logged
                self.lost += 1
                out[key] = math.inf
                continue
            self.measurements += 1
            seconds, error = res.get("latency"), res.get("error")
            record = Record(key, seconds, error, cand.names)
            if error is not None:
                self.failures.append(record)
            self.log.add(record)
            out[key] = math.inf if seconds is None else float(seconds)
        return out

    def modules(self, mods: Mapping[str, IRModule]) -> dict[str, float]:
        """Seconds per run of each whole partitioned module (``name -> module``), from the
        log or measured together as one job: built in one worker and timed in
        interleaved rounds (:func:`.measure.measure_modules`), so that they are compared
        under the same load; ``inf`` for one that failed."""
        keys = {name: self._module_key(mod) for name, mod in mods.items()}
        out: dict[str, float] = {}
        todo: list[str] = []
        for name, key in keys.items():
            hit = self.log.get(key)
            if hit is not None:
                self.reused += 1
                out[name] = math.inf if hit.latency is None else hit.latency
            elif not self.measure_missing:
                self.missing += 1
                out[name] = math.inf
            else:
                todo.append(name)
        if self.measure is not None or not todo:  # a test's measure times candidates only
            return {name: out.get(name, math.inf) for name in mods}
        spec = tuple(save_json(mods[n]) for n in todo)
        job = Job("", "models", self.threads, self.repeat, MODULE_BUDGET, whole=True, modules=spec)
        res = self.pool().map([job])[0]
        if "lost" in res:
            self.lost += len(todo)
            out.update({name: math.inf for name in todo})
            return out
        for k, name in enumerate(todo):
            self.measurements += 1
            record = Record(keys[name], res["latencies"][k], res["errors"][k], ("model", name))
            if record.error is not None:
                self.failures.append(record)
            self.log.add(record)
            out[name] = math.inf if record.latency is None else float(record.latency)
        return out

    def _module_key(self, mod: IRModule) -> MeasureKey:
        text = mod.astext(show_meta_data=False)
        region = "model-" + hashlib.sha256(text.encode()).hexdigest()[:26]
        return MeasureKey(region, "model", __version__, self.threads, self.machine)

    def close(self) -> None:
        """Stop the worker processes (or leave the Ray cluster)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def boundary(self, candidate: Candidate, target: str) -> float:
        return 0.0
