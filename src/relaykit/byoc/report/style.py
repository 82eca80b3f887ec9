"""What the pictures of a partition share: a colour per target, node labels, and the
regions (one per partitioned function) with their operators, MACs and parameter bytes.

>>> target_colors(["dnnl", "ccompiler"])
{'dnnl': '#4e79a7', 'ccompiler': '#f28e2b', 'host': '#d5d9de'}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .explain import OpReport, Report
from .summary import Summary, _bytes, _runs, _si

__all__ = [
    "HOST",
    "HOST_COLOR",
    "PALETTE",
    "RegionView",
    "target_colors",
    "text_color",
    "regions",
    "node_label",
    "human_count",
    "human_bytes",
    "op_runs",
]

#: The placement of operators that stay on the host.
HOST = "host"
HOST_COLOR = "#d5d9de"
#: Target colours, in target priority order (Tableau 10: distinct, colour-blind aware).
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#b07aa1",
    "#76b7b2",
    "#edc948",
    "#ff9da7",
    "#9c755f",
)


def target_colors(targets: Sequence[str]) -> dict[str, str]:
    """A fill colour per target (cycling through ``PALETTE``), and ``host``'s grey."""
    colors = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(targets) if t != HOST}
    colors[HOST] = HOST_COLOR
    return colors


def text_color(fill: str) -> str:
    """Black or white, whichever reads better on ``fill`` (``#rrggbb``)."""
    r, g, b = (int(fill[i : i + 2], 16) for i in (1, 3, 5))
    return "#111111" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff"


def node_label(op: OpReport) -> str:
    """The text drawn in an operator's box."""
    return op.op


@dataclass(frozen=True)
class RegionView:
    """One partitioned function: its target, its operator rows and its cost."""

    function: str
    target: str
    ops: tuple[int, ...]
    macs: int
    param_bytes: int
    dtypes: tuple[str, ...] = ()


def regions(report: Report, summary: Summary | None = None) -> list[RegionView]:
    """The report's partitioned functions in report order, with MACs and parameter
    bytes from ``summary`` (or the report's regions when no summary is given)."""
    rows: dict[str, list[int]] = {}
    target: dict[str, str] = {}
    for r in report.ops:
        if r.function is not None:
            rows.setdefault(r.function, []).append(r.index)
            target[r.function] = r.placement
    cost: dict[str, tuple[int, int, tuple[str, ...]]] = {
        g.function: (g.macs, 0, ()) for g in report.regions if g.function is not None
    }
    if summary is not None:
        for t in summary.targets.values():
            for f in t.functions:
                cost[f.name] = (f.macs, f.param_bytes, tuple(f.dtypes))
    return [
        RegionView(name, target[name], tuple(idx), *cost.get(name, (0, 0, ())))
        for name, idx in rows.items()
    ]


def human_count(value: float) -> str:
    """``1234567`` as ``1.23 M`` (as the summary tables print MACs)."""
    return _si(value).strip()


def human_bytes(value: int) -> str:
    """``2048`` as ``2.0 KB``."""
    return _bytes(value)


def op_runs(names: Sequence[str]) -> str:
    """``a, a, b`` as ``a x2, b``."""
    return ", ".join(_runs(names))
