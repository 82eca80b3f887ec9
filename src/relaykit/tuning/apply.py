"""Applying a placement: every unit pinned to its target, then the usual partitioning.

``AnnotateTarget`` with one pin per target, ``MergeCompilerRegions`` and
``PartitionGraph``, with no minimum region size (the measurements decided); neighbouring
units on one target become one region.
"""

from __future__ import annotations

from collections.abc import Callable

from relaykit.byoc.annotate import AnnotateTarget
from relaykit.byoc.merge_regions import MergeCompilerRegions
from relaykit.byoc.partition import PartitionGraph
from relaykit.byoc.pins import Pin
from relaykit.byoc.targets import configure_target, scoped_registries
from relaykit.ir.expr import Call
from relaykit.ir.module import IRModule
from relaykit.transform.pass_infra import Sequential

from .search import Placement
from .units import UnitGraph

__all__ = ["apply_placement"]


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
