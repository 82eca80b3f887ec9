"""The placement of least total latency, by dynamic programming over the units' order.

Units are in a topological order; a region is a contiguous run of it (convex, so
no placement has a cycle between regions). The candidates: every connected run of at
most ``max_units`` units (``host_max_units`` on the host) on every target that can run
all of it, and, per target, every longest run of units it can run (the region as large
as the backend supports, :func:`maximal_runs`). The cost source gives each a latency
and a boundary cost; then

    best[j] = min over i < j and targets t of best[i] + latency(i..j, t) + boundary(i..j, t)

and the choices behind ``best[n]`` are the placement. Ties go to the fewer regions,
then to the earlier target in the list, the host last. Neighbouring regions a
placement puts on one target (or on either side of regions that target could also
run) are then offered to it as one region (:func:`merged_runs`: one call, one session
or program, no boundary between them), measured against their parts, and the
placement decided again, for a few rounds (:func:`refine`).

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from relaykit.byoc.pins import HOST
from relaykit.errors import PlacementError

from .candidates import Candidate, cut
from .cost import CostSource, MockCostEstimator, Progress
from .units import UnitGraph, unit_graph

__all__ = [
    "Segment",
    "Placement",
    "Measured",
    "search",
    "measure_runs",
    "maximal_runs",
    "merged_runs",
    "refine",
    "choose",
    "MockCostEstimator",
    "unit_graph",
]


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
    return _union(runs, maximal_runs(graph, targets))


def _union(*lists: list[tuple[int, int, list[str]]]) -> list[tuple[int, int, list[str]]]:
    """The runs of ``lists`` with one entry per ``(start, stop)``, its targets united in
    first-seen order."""
    merged: dict[tuple[int, int], list[str]] = {}
    for runs in lists:
        for i, j, ok in runs:
            have = merged.setdefault((i, j), [])
            have.extend(t for t in ok if t not in have)
    return [(i, j, ok) for (i, j), ok in merged.items()]


def maximal_runs(graph: UnitGraph, targets: Sequence[str]) -> list[tuple[int, int, list[str]]]:
    """Per target (not the host), each longest run of consecutive units it can run all of,
    when longer than one unit: the region as large as the backend supports, whatever
    ``max_units`` says (a contiguous run of a topological order is convex).

    >>> import relaykit as tvm
    >>> from relaykit import relay
    >>> from relaykit.transform import InferType
    >>> x = relay.var("x", shape=(4,))
    >>> mod = InferType()(tvm.IRModule.from_expr(relay.exp(relay.nn.relu(relay.abs(x)))))
    >>> maximal_runs(unit_graph(mod["main"], ["onnxruntime"]), ["onnxruntime"])
    [(0, 3, ['onnxruntime'])]
    """
    out = []
    n = len(graph.units)
    for t in targets:
        if t == HOST:
            continue
        i = 0
        while i < n:
            j = i
            while j < n and t in graph.units[j].targets:
                j += 1
            if j - i > 1:
                out.append((i, j, [t]))
            i = j + 1 if j == i else j
    return out


def merged_runs(graph: UnitGraph, placement: Placement) -> list[tuple[int, int, list[str]]]:
    """Runs joining regions of ``placement`` onto one target: for each region on a backend,
    the run from it to the next region on the same backend, and to the last such region,
    when that backend can run every unit between (it then makes one region of them, with
    one call and no boundary, where the placement has several).

    >>> from relaykit.tuning.units import Unit
    >>> seg = lambda i, j, t: Segment(i, j, t, 1.0, 0.0, ())
    >>> graph = UnitGraph(None, [Unit(k, None, "op", frozenset({"a", "host"})) for k in range(4)])
    >>> placed = Placement((seg(0, 1, "a"), seg(1, 2, "host"), seg(2, 4, "a")), 3.0, ("a",))
    >>> merged_runs(graph, placed)
    [(0, 4, ['a'])]
    """
    segs = placement.segments
    out: list[tuple[int, int, list[str]]] = []
    for a, first in enumerate(segs):
        t = first.target
        if t == HOST:
            continue
        later = []
        for b in range(a + 1, len(segs)):
            seg = segs[b]
            if not all(t in graph.units[u].targets for u in range(seg.start, seg.stop)):
                break
            if seg.target == t:
                later.append(seg.stop)
        for stop in {later[0], later[-1]} if later else ():
            out.append((first.start, stop, [t]))
    return sorted(out)


#: Jobs handed to the cost source at once (a batch runs in parallel where it can; the
#: progress callback hears after each batch).
BATCH = 32

Latencies = dict[tuple[int, int], dict[str, tuple[float, float]]]


def cover(best_run: dict[tuple[int, int], float], i: int, j: int) -> float:
    """The least time known for units ``i`` .. ``j - 1``: the best chain of measured runs
    inside them (``best_run[(m, q)]``: the least time of run ``m`` .. ``q - 1``)."""
    f = {i: 0.0}
    for q in range(i + 1, j + 1):
        f[q] = min(
            (f[m] + best_run[(m, q)] for m in range(i, q) if (m, q) in best_run),
            default=math.inf,
        )
    return f[j]


#: The most a region is taken to gain over the two measured halves it joins, as a
#: fraction of their sum (fused post-ops, one call, layouts kept); past that it is
#: not measured.
FUSION_GAIN = 0.3


def hopeless(lat: Latencies, i: int, j: int, t: str, bound: float) -> bool:
    """Whether ``t`` cannot win run ``i`` .. ``j - 1`` against ``bound``, the best time
    known for the whole run, judged by the runs inside it already measured on ``t``:
    one of them alone takes longer (a region does at least the work of any part of
    it) or fails on ``t``; or two halves joined take so long that even a
    ``FUSION_GAIN`` saving leaves them slower.

    >>> lat = {(0, 1): {"a": (3.0, 0.0)}, (1, 2): {"a": (1.0, 0.0)}}
    >>> hopeless(lat, 0, 2, "a", 2.5), hopeless(lat, 0, 2, "a", 3.5)
    (True, False)
    """
    worst = 0.0
    for a in range(i, j):
        for b in range(a + 1, j + 1 if a > i else j):
            seconds = lat.get((a, b), {}).get(t, (0.0, 0.0))[0]
            worst = max(worst, seconds)
    if not worst <= bound:
        return True
    joined = math.inf
    for m in range(i + 1, j):
        left, right = lat.get((i, m), {}).get(t), lat.get((m, j), {}).get(t)
        if left is not None and right is not None:
            joined = min(joined, sum(left) + sum(right))
    return math.isfinite(joined) and (1 - FUSION_GAIN) * joined > bound


def _evaluate(cost: CostSource, jobs: list[tuple[Candidate, str, float]]) -> list[float]:
    batch = getattr(cost, "latencies", None)
    if batch is not None:
        return list(batch(jobs))
    return [cost.latency(c, t) for c, t, _ in jobs]


@dataclass
class Measured:
    """What :func:`_measure` has learned so far."""

    lat: Latencies = field(default_factory=dict)
    names: dict[tuple[int, int], tuple[str, ...]] = field(default_factory=dict)
    cands: dict[tuple[int, int], Candidate] = field(default_factory=dict)
    #: unit -> target -> seconds of that unit alone
    single: dict[int, dict[str, float]] = field(default_factory=dict)
    #: run -> least seconds (with boundary) over the targets measured
    best_run: dict[tuple[int, int], float] = field(default_factory=dict)
    done: int = 0

    def bound(self, i: int, j: int) -> float:
        if j - i == 1:
            return min(self.single.get(i, {}).values(), default=math.inf)
        return cover(self.best_run, i, j)

    def record(self, i: int, j: int, t: str, seconds: float, boundary: float) -> None:
        self.lat.setdefault((i, j), {})[t] = (seconds, boundary)
        if j - i == 1:
            self.single.setdefault(i, {})[t] = seconds
        self.best_run[(i, j)] = min(self.best_run.get((i, j), math.inf), seconds + boundary)
        self.done += 1


def _measure(
    graph: UnitGraph,
    runs: list[tuple[int, int, list[str]]],
    order: list[str],
    cost: CostSource,
    prune: bool,
    progress: Progress | None,
    m: Measured | None = None,
) -> Measured:
    """The latency of every run on every target that can run it and might win it.

    Runs are measured shortest first, so that a longer run is bounded by the best
    chain of shorter ones (:func:`cover`) and skipped on a target that cannot win it
    (:func:`hopeless`); single units go target by target, each bounded by the targets
    before it. Each phase's jobs go to the cost source in batches.
    """
    m = Measured() if m is None else m
    total = m.done + sum(len(ok) for _, _, ok in runs)
    by_len: dict[int, list[tuple[int, int, list[str]]]] = {}
    for run in runs:
        by_len.setdefault(run[1] - run[0], []).append(run)
    for length in sorted(by_len):
        for phase in [[t] for t in order] if length == 1 else [order]:
            where: list[tuple[int, int, str, float]] = []
            for i, j, ok in by_len[length]:
                bound = m.bound(i, j)
                for t in (t for t in ok if t in phase):
                    if length > 1 and prune and hopeless(m.lat, i, j, t, bound):
                        m.done += 1
                    else:
                        where.append((i, j, t, bound))
            for start in range(0, len(where), BATCH):
                _batch(graph, cost, m, where[start : start + BATCH], total, progress)
    return m


def _batch(
    graph: UnitGraph,
    cost: CostSource,
    m: Measured,
    chunk: list[tuple[int, int, str, float]],
    total: int,
    progress: Progress | None,
) -> None:
    jobs = []
    for i, j, t, bound in chunk:
        if (i, j) not in m.cands:
            m.cands[(i, j)] = cut(graph, i, j)
            m.names[(i, j)] = m.cands[(i, j)].names
        jobs.append((m.cands[(i, j)], t, bound))
    answers = _evaluate(cost, jobs)
    for (i, j, t, _), (cand, _, _), seconds in zip(chunk, jobs, answers, strict=True):
        m.record(i, j, t, seconds, cost.boundary(cand, t) if math.isfinite(seconds) else 0.0)
        if progress is not None:
            progress(m.done, total, f"{'+'.join(cand.names[:3])} on {t}")


def measure_runs(
    graph: UnitGraph,
    targets: Sequence[str],
    cost: CostSource,
    *,
    max_units: int = 8,
    host_max_units: int = 4,
    progress: Progress | None = None,
    prune: bool = True,
) -> Measured:
    """The latencies :func:`search` decides from (see :func:`_measure`)."""
    runs = _runs(graph, targets, max(1, max_units), max(1, host_max_units))
    return _measure(graph, runs, [*targets, HOST], cost, prune, progress)


def search(
    graph: UnitGraph,
    targets: Sequence[str],
    cost: CostSource,
    *,
    max_units: int = 8,
    host_max_units: int = 4,
    progress: Progress | None = None,
    prune: bool = True,
    switch: Mapping[tuple[str, str], float] | float | None = None,
) -> Placement:
    """The least-cost placement of ``graph``'s units on ``targets`` and the host
    (``prune``: skip runs a target cannot win, see :func:`hopeless`; ``switch[(a, b)]``:
    seconds lost when a region on ``b`` follows one on ``a``, or one number for every
    change, the model's inputs and outputs being on the host; a segment's ``boundary``
    includes it)."""
    runs = _runs(graph, targets, max(1, max_units), max(1, host_max_units))
    measured = _measure(graph, runs, [*targets, HOST], cost, prune, progress)
    return refine(graph, targets, measured, cost, prune=prune, progress=progress, switch=switch)


#: Rounds of offering a placement's neighbouring regions on one target as one region.
MERGE_ROUNDS = 4


def refine(
    graph: UnitGraph,
    targets: Sequence[str],
    measured: Measured,
    cost: CostSource,
    *,
    rounds: int = MERGE_ROUNDS,
    prune: bool = True,
    progress: Progress | None = None,
    switch: Mapping[tuple[str, str], float] | float | None = None,
) -> Placement:
    """The placement :func:`choose` makes, improved: its neighbouring regions that one
    target could run as one (:func:`merged_runs`) are measured there (unless a part of
    them already shows that target cannot win, see :func:`hopeless`) and the placement
    chosen again, until no new run is offered or after ``rounds`` rounds. ``measured``
    gains the new latencies."""
    placement = choose(graph, targets, measured, switch)
    tried = {(i, j, t) for (i, j), by in measured.lat.items() for t in by}
    order = [*targets, HOST]
    for _ in range(rounds):
        new = [
            (i, j, [t])
            for i, j, ok in merged_runs(graph, placement)
            for t in ok
            if (i, j, t) not in tried
        ]
        if not new:
            break
        tried.update((i, j, ok[0]) for i, j, ok in new)
        _measure(graph, new, order, cost, prune, progress, measured)
        placement = choose(graph, targets, measured, switch)
    return placement


def choose(
    graph: UnitGraph,
    targets: Sequence[str],
    measured: Measured,
    switch: Mapping[tuple[str, str], float] | float | None = None,
) -> Placement:
    """The dynamic programme of :func:`search` over latencies already measured
    (``switch``: per pair of targets, or one number for every change)."""
    n = len(graph.units)
    lat, names = measured.lat, measured.names
    pairs = switch if isinstance(switch, Mapping) else {}
    every = float(switch) if isinstance(switch, (int, float)) else 0.0

    def hop(a: str, b: str) -> float:
        return 0.0 if a == b else pairs.get((a, b), every)

    order = {t: k for k, t in enumerate([*targets, HOST])}
    # best[j][t]: (seconds, regions, target rank) of units 0..j-1 ending on target t
    best: list[dict[str, tuple[float, int, int]]] = [{HOST: (0.0, 0, 0)}] + [{} for _ in range(n)]
    choice: dict[tuple[int, str], tuple[int, str, float]] = {}
    by_stop: dict[int, list[int]] = {}
    for i, j in lat:
        by_stop.setdefault(j, []).append(i)
    for j in range(1, n + 1):
        for i in by_stop.get(j, []):
            for prev, (before, regions, _) in best[i].items():
                for t, (seconds, bound) in lat[(i, j)].items():
                    enter = hop(prev, t)
                    rank = (before + seconds + bound + enter, regions + 1, order[t])
                    if rank < best[j].get(t, (math.inf, 0, 0)):
                        best[j][t] = rank
                        choice[(j, t)] = (i, prev, bound + enter)
    ends = {t: (v[0] + hop(t, HOST), v[1], v[2]) for t, v in best[n].items()}
    last = min(ends, key=lambda t: ends[t], default=None)
    if last is None or not math.isfinite(ends[last][0]):
        raise PlacementError(
            "no placement can run every operator: each run of units failed on every target "
            "that supports it (see the tuning log's errors)"
        )
    segments: list[Segment] = []
    j, t = n, last
    while j > 0:
        i, prev, bound = choice[(j, t)]
        seconds = lat[(i, j)][t][0]
        alts = {k: v[0] for k, v in lat[(i, j)].items()}
        segments.append(Segment(i, j, t, seconds, bound, names[(i, j)], alts))
        j, t = i, prev
    segments.reverse()
    return Placement(tuple(segments), ends[last][0], tuple(targets))
