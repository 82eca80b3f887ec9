"""The placement of least total latency, by dynamic programming over the units' order.

Units are in a topological order; a region is a contiguous run of it (convex, so
no placement has a cycle between regions). For every connected run of at most
``max_units`` units (``host_max_units`` on the host) and every target that can
run all of it, the cost source gives a latency and a boundary cost; then

    best[j] = min over i < j and targets t of best[i] + latency(i..j, t) + boundary(i..j, t)

and the choices behind ``best[n]`` are the placement. Ties go to the fewer regions,
then to the earlier target in the list, the host last.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> from relaykit.transform import InferType
>>> x = relay.var("x", shape=(4,))
>>> mod = InferType()(tvm.IRModule.from_expr(relay.nn.relu(relay.abs(x))))
>>> graph = unit_graph(mod["main"], [])
>>> best = search(graph, [], MockCostEstimator({"host": 1.0}))
>>> [(s.start, s.stop, s.target) for s in best.segments], best.total
([(0, 2, 'host')], 2.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from relaykit.byoc.pins import HOST
from relaykit.errors import PlacementError

from .candidates import Candidate, cut
from .cost import CostSource, MockCostEstimator, Progress
from .units import UnitGraph, unit_graph

__all__ = ["Segment", "Placement", "search", "MockCostEstimator", "unit_graph"]


@dataclass(frozen=True)
class Segment:
    """Units ``start`` .. ``stop - 1`` on ``target``; ``alternatives``: the latency of the
    same run on every target that can run it (``inf``: it failed there)."""

    start: int
    stop: int
    target: str
    latency: float
    boundary: float
    names: tuple[str, ...]
    alternatives: dict[str, float] = field(default_factory=dict)

    @property
    def cost(self) -> float:
        return self.latency + self.boundary


@dataclass(frozen=True)
class Placement:
    """The chosen segments, in order, and their total cost (seconds per run)."""

    segments: tuple[Segment, ...]
    total: float
    targets: tuple[str, ...]

    def target_of(self, unit: int) -> str:
        for s in self.segments:
            if s.start <= unit < s.stop:
                return s.target
        size = self.segments[-1].stop if self.segments else 0
        raise PlacementError(f"unit {unit} is not in this placement (it has {size} units)")


def _find(parent: dict[int, int], a: int) -> int:
    """The representative of ``a`` in a union-find forest (halving paths)."""
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return a


def _runs(
    graph: UnitGraph, targets: Sequence[str], max_units: int, host_max_units: int
) -> list[tuple[int, int, list[str]]]:
    """Every ``(start, stop, targets able to run it)`` the search considers: runs whose
    units are connected (a run of two independent branches is two regions, which
    partitioning may merge anyway), single units always."""
    units = graph.units
    order = [*targets, HOST]
    runs = []
    longest = max(max_units, host_max_units)
    for j in range(1, len(units) + 1):
        able = set(order)
        parent: dict[int, int] = {}
        components = 0
        for i in range(j - 1, max(-1, j - 1 - longest), -1):
            able &= units[i].targets
            if able == {HOST} and j - i > host_max_units:
                break  # only the host is left, and this run is already too long for it
            parent[i] = i
            components += 1
            for u in graph.users[i]:
                if u < j and _find(parent, u) != _find(parent, i):
                    parent[_find(parent, u)] = _find(parent, i)
                    components -= 1
            if components != 1:
                continue
            length = j - i
            ok = [
                t
                for t in order
                if t in able and length <= (host_max_units if t == HOST else max_units)
            ]
            if ok:
                runs.append((i, j, ok))
    return runs


def search(
    graph: UnitGraph,
    targets: Sequence[str],
    cost: CostSource,
    *,
    max_units: int = 8,
    host_max_units: int = 4,
    progress: Progress | None = None,
) -> Placement:
    """The least-cost placement of ``graph``'s units on ``targets`` and the host."""
    n = len(graph.units)
    runs = _runs(graph, targets, max(1, max_units), max(1, host_max_units))
    total_jobs = sum(len(ok) for _, _, ok in runs)
    done = 0
    lat: dict[tuple[int, int], dict[str, tuple[float, float]]] = {}
    names: dict[tuple[int, int], tuple[str, ...]] = {}
    for i, j, ok in runs:
        cand: Candidate = cut(graph, i, j)
        names[(i, j)] = cand.names
        answers: dict[str, tuple[float, float]] = {}
        for t in ok:
            seconds = cost.latency(cand, t)
            answers[t] = (seconds, cost.boundary(cand, t) if math.isfinite(seconds) else 0.0)
            done += 1
            if progress is not None:
                progress(done, total_jobs, f"{'+'.join(cand.names[:3])} on {t}")
        lat[(i, j)] = answers
    order = {t: k for k, t in enumerate([*targets, HOST])}
    best: list[tuple[float, int, int]] = [(0.0, 0, 0)] + [(math.inf, 0, 0)] * n
    choice: list[tuple[int, str] | None] = [None] * (n + 1)
    by_stop: dict[int, list[tuple[int, int]]] = {}
    for i, j in lat:
        by_stop.setdefault(j, []).append((i, j))
    for j in range(1, n + 1):
        for i, _ in by_stop.get(j, []):
            if not math.isfinite(best[i][0]):
                continue
            for t, (seconds, bound) in lat[(i, j)].items():
                total = best[i][0] + seconds + bound
                rank = (total, best[i][1] + 1, order[t])
                if rank < (best[j][0], best[j][1], best[j][2]):
                    best[j] = (total, best[i][1] + 1, order[t])
                    choice[j] = (i, t)
    if not math.isfinite(best[n][0]):
        raise PlacementError(
            "no placement can run every operator: each run of units failed on every target "
            "that supports it (see the tuning log's errors)"
        )
    segments: list[Segment] = []
    j = n
    while j > 0:
        picked = choice[j]
        assert picked is not None
        i, t = picked
        seconds, bound = lat[(i, j)][t]
        alts = {k: v[0] for k, v in lat[(i, j)].items()}
        segments.append(Segment(i, j, t, seconds, bound, names[(i, j)], alts))
        j = i
    segments.reverse()
    return Placement(tuple(segments), best[n][0], tuple(targets))
