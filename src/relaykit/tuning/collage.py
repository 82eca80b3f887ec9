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

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from relaykit.backends import find_backend
from relaykit.byoc.annotate import AnnotateTarget
from relaykit.byoc.choose import normalize_targets
from relaykit.byoc.merge_composite import MergeComposite
from relaykit.byoc.merge_regions import MergeCompilerRegions
from relaykit.byoc.partition import PartitionGraph
from relaykit.byoc.pins import HOST, Pin
from relaykit.byoc.pipeline import optimize_for, patterns_for
from relaykit.byoc.targets import configure_target, scoped_registries
from relaykit.errors import PlacementError
from relaykit.execution.build_module import build
from relaykit.ir.expr import Call, Function
from relaykit.ir.module import IRModule
from relaykit.transform.infer_type import InferType
from relaykit.transform.pass_infra import ModulePass, Pass, PassContext, Sequential

from .cost import CostSource, MeasuredCost, Progress, host_name
from .log import TuningLog
from .search import Placement, search
from .units import UnitGraph, unit_graph

__all__ = [
    "CollageResult",
    "place",
    "apply_placement",
    "build_with_log",
    "check_placement_targets",
    "CollagePartition",
    "MAX_UNITS_KEY",
    "HOST_MAX_UNITS_KEY",
    "TUNING_LOG_KEY",
]

#: ``PassContext`` config keys (TVM's names for the two depths).
MAX_UNITS_KEY = "relay.collage.byoc_max_depth"
HOST_MAX_UNITS_KEY = "relay.collage.tvm_max_depth"
TUNING_LOG_KEY = "relay.collage.tuning_log"


@dataclass(frozen=True)
class CollageResult:
    """What :func:`place` made: the module it searched (composites merged), its units,
    the placement chosen, and the partitioned module."""

    searched: IRModule
    graph: UnitGraph
    placement: Placement
    partitioned: IRModule


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


def _member_of(calls: frozenset[Call]) -> Callable[[Call], bool]:
    def member(call: Call) -> bool:
        return call in calls

    return member


def apply_placement(
    searched: IRModule, graph: UnitGraph, placement: Placement, mod_name: str = "default"
) -> IRModule:
    """Partition ``searched`` so that every unit runs where ``placement`` put it."""
    chosen: dict[str, set[Call]] = {}
    for seg in placement.segments:
        chosen.setdefault(seg.target, set()).update(
            graph.units[i].call for i in range(seg.start, seg.stop)
        )
    pins = [Pin(predicate=_member_of(frozenset(calls)), to=t) for t, calls in chosen.items()]
    targets = list(placement.targets)
    if not targets:
        return searched
    with scoped_registries():
        for t in targets:
            configure_target(t, min_region_ops=0, min_region_macs=0)
        passes = [
            AnnotateTarget(targets, pin=pins),
            MergeCompilerRegions(),
            PartitionGraph(mod_name),
        ]
        return Sequential(passes, name="CollageApply")(searched)


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
) -> CollageResult:
    """Measure candidates of ``mod`` on ``targets`` and the host, choose the placement of
    least total latency and partition ``mod`` by it.

    ``cost`` defaults to measuring on this machine (:class:`MeasuredCost`) with the
    tuning log ``log`` (a path or a :class:`TuningLog`): measurements it holds are
    reused, new ones appended.

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
    if cost is None:
        cost = MeasuredCost(log if isinstance(log, TuningLog) else TuningLog(log))
    searched = _searched(mod, names, params)
    graph = unit_graph(searched["main"], names)
    placement = search(
        graph, names, cost, max_units=max_units, host_max_units=host_max_units, progress=progress
    )
    return CollageResult(searched, graph, placement, apply_placement(searched, graph, placement))


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


def CollagePartition(config: Any, cost_estimator: CostSource | None = None) -> Pass:
    """TVM's ``relay.transform.CollagePartition(config, cost_estimator=None)``: a module
    pass placing ``main`` by :func:`place` on the targets of ``config`` (a compilation
    config, or a list of targets; the host's names are the host). Depths and the tuning
    log come from the ``PassContext`` config (``relay.collage.byoc_max_depth``,
    ``relay.collage.tvm_max_depth``, ``relay.collage.tuning_log``)."""
    targets = _config_targets(config)

    def run(mod: IRModule, ctx: PassContext) -> IRModule:
        cfg = ctx.config
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
