"""Measured placement, Collage-style: candidates, costs, the best placement, applied.

:func:`place` runs every target's optimize hook, merges every target's composite
patterns, lists the units (:mod:`.units`), finds the least-cost placement
(:mod:`.search`) with a cost source (measured by default, :class:`.cost.MeasuredCost`,
reusing a tuning log when given) and partitions the module accordingly: every unit
is pinned to its chosen target, then ``AnnotateTarget``, ``MergeCompilerRegions`` and
``PartitionGraph`` run as usual (with no minimum region size: the measurements
decided). :func:`CollagePartition` is the same as a module pass under TVM's name.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from relaykit.backends import find_backend
from relaykit.byoc.choose import normalize_targets
from relaykit.byoc.merge_composite import MergeComposite
from relaykit.byoc.pins import HOST
from relaykit.byoc.pipeline import optimize_for, partition_for, patterns_for
from relaykit.byoc.rules import check_op
from relaykit.errors import PlacementError
from relaykit.execution.build_module import build
from relaykit.ir.expr import Call, Function
from relaykit.ir.module import IRModule
from relaykit.op.contrib import get_pattern_table
from relaykit.target import Target, list_kinds
from relaykit.transform.infer_type import InferType
from relaykit.transform.pass_infra import ModulePass, Pass, PassContext, Sequential

from .apply import apply_placement
from .cost import CostSource, MeasuredCost, Progress, host_name
from .log import TuningLog
from .search import Measured, Placement, measure_runs, refine
from .subgraph_rules import DEFAULT_FUSION_STYLES, FUSION_STYLES
from .subgraph_search import Spec, collage_partition
from .units import UnitGraph, unit_graph

__all__ = [
    "CollageResult",
    "place",
    "apply_placement",
    "build_with_log",
    "check_placement_targets",
    "CollagePartition",
    "collage_specs",
    "MAX_UNITS_KEY",
    "HOST_MAX_UNITS_KEY",
    "TUNING_LOG_KEY",
]

#: ``PassContext`` config keys (TVM's names for the two depths).
MAX_UNITS_KEY = "relay.collage.byoc_max_depth"
HOST_MAX_UNITS_KEY = "relay.collage.tvm_max_depth"
TUNING_LOG_KEY = "relay.collage.tuning_log"
FUSION_STYLE_KEY = "relay.collage.byoc_fusion_style"


@dataclass(frozen=True)
class CollageResult:
    """What :func:`place` made: the module it searched (composites merged), its units,
    the placement chosen, and the partitioned module."""

    searched: IRModule
    graph: UnitGraph
    placement: Placement
    partitioned: IRModule
    #: what ``partitioned`` is: ``"measured"`` (the placement), or the target whose own
    #: partitioning ran faster end to end (``"host"``: nothing offloaded)
    chosen: str = "measured"
    #: seconds per run of the whole model, each way checked (empty when not checked)
    whole: Mapping[str, float] = field(default_factory=dict)


def check_placement_targets(targets: str | Sequence[str]) -> tuple[str, ...]:
    """``targets`` without the host's names, each a known and available backend; a
    :class:`~relaykit.errors.PlacementError` naming the first that is not."""
    names = tuple(t for t in normalize_targets(targets) if host_name(t) != HOST)
    for t in names:
        backend = find_backend(t)
        if backend is None:
            raise PlacementError(
                f"unknown backend {t!r} in the targets; 'relaykit backends' lists the known ones"
            )
        missing = backend.requires.missing()
        if missing is not None:
            hint = backend.requires.command
            raise PlacementError(
                f"backend {t!r} is not available: {missing}" + (f" ({hint})" if hint else "")
            )
    return names


def _searched(
    mod: IRModule | Function, targets: Sequence[str], params: Mapping[str, Any] | None
) -> IRModule:
    optimized = optimize_for(mod, targets, params)
    table = patterns_for(targets) if targets else []
    passes: list[Pass] = [InferType()]
    if table:
        passes += [MergeComposite(table), InferType()]
    return Sequential(passes, name="CollagePrepare")(optimized)


def place(
    mod: IRModule | Function,
    targets: str | Sequence[str],
    params: Mapping[str, Any] | None = None,
    *,
    cost: CostSource | None = None,
    log: str | os.PathLike[str] | TuningLog | None = None,
    max_units: int = 8,
    host_max_units: int = 4,
    progress: Progress | None = None,
    ray_address: str | None = None,
) -> CollageResult:
    """Measure candidates of ``mod`` on ``targets`` and the host, choose the placement of
    least total latency and partition ``mod`` by it; with a measured cost source, the
    whole model so placed is then timed against each target's own partitioning (and the
    host alone), and the fastest is returned (``chosen`` says which).

    ``cost`` defaults to measuring on this machine (:class:`MeasuredCost`) with the
    tuning log ``log`` (a path or a :class:`TuningLog`): measurements it holds are
    reused, new ones appended. New measurements run in local worker processes pinned to
    their own cores, or with ``ray_address`` (``"host:port"``) as tasks on that Ray
    cluster.

    >>> import relaykit as tvm
    >>> from relaykit import relay
    >>> from relaykit.tuning import MockCostEstimator
    >>> x = relay.var("x", shape=(2, 2))
    >>> mod = tvm.IRModule.from_expr(relay.nn.relu(x))
    >>> res = place(mod, ["onnxruntime"], cost=MockCostEstimator({"host": 2, "onnxruntime": 1}))
    >>> [s.target for s in res.placement.segments]
    ['onnxruntime']
    """
    names = check_placement_targets(targets)
    own = None
    if cost is None:
        tlog = log if isinstance(log, TuningLog) else TuningLog(log)
        cost = own = MeasuredCost(tlog, ray_address=ray_address)
    try:
        searched = _searched(mod, names, params)
        graph = unit_graph(searched["main"], names)
        measured = measure_runs(
            graph,
            names,
            cost,
            max_units=max_units,
            host_max_units=host_max_units,
            progress=progress,
        )
        placement = refine(graph, names, measured, cost, progress=progress)
        partitioned = apply_placement(searched, graph, placement)
        chosen, whole = "measured", dict[str, float]()
        if getattr(cost, "modules", None) is not None:
            checked = _calibrated(mod, params, names, searched, graph, measured, cost, placement)
            chosen, whole, placement, partitioned = checked
    finally:
        if own is not None:
            own.close()
    return CollageResult(searched, graph, placement, partitioned, chosen, whole)


#: Rounds of re-deciding with the cost of a change of backend that the model measured
#: end to end implies.
CALIBRATION_ROUNDS = 2


def changes(placement: Placement) -> int:
    """How many times control passes from one target to another, starting and ending
    on the host."""
    count, prev = 0, HOST
    for seg in placement.segments:
        count += seg.target != prev
        prev = seg.target
    return count + (prev != HOST)


def _calibrated(
    mod: IRModule | Function,
    params: Mapping[str, Any] | None,
    names: Sequence[str],
    searched: IRModule,
    graph: UnitGraph,
    measured: Measured,
    cost: Any,
    placement: Placement,
) -> tuple[str, dict[str, float], Placement, IRModule]:
    """The placement checked end to end against each target alone and the host.

    Regions were timed alone; next to other backends they also pay for thread pools
    handing over and tensors changing hands. The placed model's measured time beyond
    its regions' sum, spread over its changes of backend, is charged per change and
    the placement decided again (``CALIBRATION_ROUNDS`` times at most, while it
    changes); the fastest end to end of all is returned, with every time measured."""
    ways = {t: _alone(mod, t, params) for t in [*names, HOST]}
    ways["measured"] = apply_placement(searched, graph, placement)
    whole: dict[str, float] = dict(cost.modules(ways))  # together, in interleaved rounds
    placements = {"measured": placement}
    used, name = 0.0, "measured"
    for k in range(1, CALIBRATION_ROUNDS + 1):
        count = changes(placement)
        if count == 0 or not math.isfinite(whole[name]):
            break
        raw = placement.total - used * count
        used = max(used, (whole[name] - raw) / count)
        again = refine(graph, names, measured, cost, switch=used)
        if [(s.start, s.stop, s.target) for s in again.segments] == [
            (s.start, s.stop, s.target) for s in placement.segments
        ]:
            break
        name, placement = f"measured {k}", again
        placements[name] = again
        ways[name] = apply_placement(searched, graph, again)
        whole.update(cost.modules({name: ways[name]}))
    best = min(whole, key=lambda k: (whole[k], k not in placements))
    if not math.isfinite(whole[best]):
        best = "measured"
    return best, whole, placements.get(best, placement), ways[best]


def _alone(mod: IRModule | Function, target: str, params: Mapping[str, Any] | None) -> IRModule:
    """``mod`` as ``target``'s own partitioning places it (the host: as it is)."""
    if target == HOST:
        base = mod if isinstance(mod, IRModule) else IRModule.from_expr(mod)
        return InferType()(optimize_for(base, [], params))
    return partition_for(mod, target, params)


def _config_targets(config: Any) -> list[str]:
    """Target names from TVM's ``CompilationConfig``, ``Target`` objects or strings."""
    items = getattr(config, "primitive_targets", config)
    if isinstance(items, str):
        items = [items]
    out = []
    for item in items:
        kind = getattr(item, "kind", None)
        name = getattr(kind, "name", None) or str(item)
        out.append(str(name).split(" ", 1)[0])
    return out


#: ``pattern_table(name)``: the pattern table of an external codegen, or None.
PatternTables = Callable[[str], Any]


def _is_compiler(name: str) -> bool:
    """Whether target kind ``name`` is a compiler (``llvm``, ``cuda``...) rather than an
    external codegen (``ccompiler``, a backend...)."""
    return name in list_kinds() and bool(Target(name).keys)


def _fusion_styles(entries: Any) -> dict[str, str]:
    styles = dict(DEFAULT_FUSION_STYLES)
    for entry in entries or ():
        compiler, dot, style = str(entry).partition(".")
        if not dot or style not in FUSION_STYLES:
            raise PlacementError(
                f"relay.collage.byoc_fusion_style entry {str(entry)!r} is not "
                f"'<compiler>.<style>' with a style among {sorted(FUSION_STYLES)}"
            )
        styles[compiler] = style
    return styles


def collage_specs(
    config: Any, pattern_table: PatternTables | None = None, fusion_styles: Any = None
) -> list[Spec]:
    """The specs Collage's search gathers from ``config``: one per target (a compiler
    kind, or an external codegen with its pattern table or, lacking one, its backend's
    rules, unioned by its fusion style: ``fusion_styles`` holds TVM's
    ``"<compiler>.<NoFusion|TVMFusion|ArbitraryFusion>"`` entries), then the host's."""
    lookup = pattern_table if pattern_table is not None else get_pattern_table
    styles = _fusion_styles(fusion_styles)
    specs = []
    for name in dict.fromkeys(_config_targets(config)):
        if _is_compiler(name):
            specs.append(Spec(name, external=False))
            continue
        table = lookup(name)
        backend = find_backend(name)
        if table is None and backend is None:
            raise PlacementError(
                f"target {name!r} has no pattern table and no backend: register one with "
                "relay.op.contrib.register_pattern_table or name a known backend"
            )

        def accepts(call: Call, name: str = name) -> bool:
            return check_op(call, name).accepted

        fusion = FUSION_STYLES[styles.get(name, "ArbitraryFusion")]
        rules = accepts if backend is not None else None
        specs.append(Spec(name, True, table, rules, fusion=fusion))
    host = getattr(getattr(config, "host_target", None), "kind", None)
    specs.append(Spec(str(getattr(host, "name", "llvm")), external=False, host=True))
    return specs


def CollagePartition(
    config: Any,
    cost_estimator: CostSource | None = None,
    pattern_table: PatternTables | None = None,
) -> Pass:
    """TVM's ``relay.transform.CollagePartition(config, cost_estimator=None)``: a module
    pass placing ``main`` on the targets of ``config`` (a compilation config, or a list of
    targets; the host's names are the host). Depths and the tuning log come from the
    ``PassContext`` config (``relay.collage.byoc_max_depth``,
    ``relay.collage.tvm_max_depth``, ``relay.collage.tuning_log``).

    With an estimator answering ``estimate(mod, target)`` (TVM's interface, as
    ``MockCostEstimator`` does) this is TVM's search over sub-graphs
    (:mod:`.subgraph_search`): functions ``collage_<target>_<ops>``; otherwise the
    placement is measured by :func:`place`."""
    targets = _config_targets(config)

    def run(mod: IRModule, ctx: PassContext) -> IRModule:
        cfg = ctx.config
        if cost_estimator is not None and hasattr(cost_estimator, "estimate"):
            return collage_partition(
                mod,
                collage_specs(config, pattern_table, cfg.get(FUSION_STYLE_KEY)),
                cost_estimator,  # type: ignore[arg-type]
                tvm_depth=int(cfg.get(HOST_MAX_UNITS_KEY, 3)),
                byoc_depth=int(cfg.get(MAX_UNITS_KEY, 3)),
            )
        result = place(
            mod,
            targets,
            cost=cost_estimator,
            log=cfg.get(TUNING_LOG_KEY),
            max_units=int(cfg.get(MAX_UNITS_KEY, 8)),
            host_max_units=int(cfg.get(HOST_MAX_UNITS_KEY, 4)),
        )
        return result.partitioned

    return ModulePass(run, 0, "CollagePartition", ("InferType",))


def build_with_log(
    mod: IRModule | Function,
    targets: str | Sequence[str],
    tuning_log: str | os.PathLike[str] | TuningLog,
    params: Mapping[str, Any] | None = None,
    *,
    any_machine: bool = False,
) -> Any:
    """``relay.build`` of ``mod`` placed by the measurements of ``tuning_log`` alone:
    nothing is measured (a candidate the log lacks is not considered); a
    :class:`~relaykit.errors.PlacementError` when the log cannot place every operator.

    Returns the factory module ``relay.build`` returns.
    """
    log = (
        tuning_log
        if isinstance(tuning_log, TuningLog)
        else TuningLog(tuning_log, any_machine=any_machine)
    )
    result = place(mod, targets, params, cost=MeasuredCost(log, measure_missing=False))
    return build(result.partitioned, target="llvm")
