"""Measured placement (Collage-style) and its tuning log.

Which backend runs which operators is decided by timing: candidate regions from
every target's patterns and rules (and the host) are measured on each target that
supports them, and the placement of least total latency is chosen by dynamic
programming over the dataflow graph (:mod:`.search`). Measurements are cached in a
tuning log (:mod:`.log`) and reused on the next tune and build.

>>> from relaykit.tuning import place, MockCostEstimator  # doctest: +SKIP
>>> result = place(mod, ["dnnl", "onnxruntime"], params, log="tune.jsonl")  # doctest: +SKIP
"""

from __future__ import annotations

from .candidates import Candidate, cut, region_key
from .collage import (
    CollagePartition,
    CollageResult,
    apply_placement,
    build_with_log,
    check_placement_targets,
    place,
)
from .cost import CallableCost, CostSource, MeasuredCost, MockCostEstimator
from .log import MeasureKey, Record, TuningLog, machine_fingerprint
from .measure import measure_function, realistic_inputs
from .report import placement_table, why
from .search import Placement, Segment, search
from .units import Unit, UnitGraph, supports, unit_graph

__all__ = [
    "CallableCost",
    "Candidate",
    "CollagePartition",
    "CollageResult",
    "CostSource",
    "MeasureKey",
    "MeasuredCost",
    "MockCostEstimator",
    "Placement",
    "Record",
    "Segment",
    "TuningLog",
    "Unit",
    "UnitGraph",
    "apply_placement",
    "build_with_log",
    "check_placement_targets",
    "cut",
    "machine_fingerprint",
    "measure_function",
    "place",
    "placement_table",
    "realistic_inputs",
    "region_key",
    "search",
    "supports",
    "unit_graph",
    "why",
]
