"""Measured placement explained: each chosen region, its time on every target that can
run it, and why the winner won.

>>> from relaykit.tuning.search import Placement, Segment
>>> seg = Segment(0, 2, "dnnl", 2e-5, 0.0, ("dnnl.conv2d_bias_relu", "add"),
...               {"dnnl": 2e-5, "onnxruntime": 3e-5, "host": 9e-5})
>>> print(why(seg))
fastest of 3: onnxruntime 30.0 us (1.50x), host 90.0 us (4.50x)
"""

from __future__ import annotations

import math

from .collage import CollageResult
from .search import Segment

__all__ = ["why", "placement_table", "format_seconds"]


def format_seconds(seconds: float) -> str:
    """``12.3 us`` / ``1.234 ms``, ``no time`` for a target with no measurement."""
    if not math.isfinite(seconds):
        return "no time"
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


def why(seg: Segment) -> str:
    """Why ``seg`` runs where it does, from its alternatives."""
    others = sorted(
        ((t, v) for t, v in seg.alternatives.items() if t != seg.target), key=lambda tv: tv[1]
    )
    if not others:
        return "the only target that runs it"
    parts = []
    for t, v in others:
        if not math.isfinite(v):
            parts.append(f"{t} no time (it failed, or the log lacks it)")
        elif seg.latency > 0:
            parts.append(f"{t} {format_seconds(v)} ({v / seg.latency:.2f}x)")
        else:
            parts.append(f"{t} {format_seconds(v)}")
    extra = f", plus {format_seconds(seg.boundary)} to call it" if seg.boundary else ""
    return f"fastest of {len(others) + 1}{extra}: " + ", ".join(parts)


def placement_table(result: CollageResult, singles: dict[str, float] | None = None) -> str:
    """One row per chosen region (units, target, time, why, operators), the total, and
    the best placement of each target alone with the host when ``singles`` gives it."""
    rows = [("units", "target", "time", "why", "operators")]
    for s in result.placement.segments:
        ops = ", ".join(s.names[:3]) + (" ..." if len(s.names) > 3 else "")
        rows.append((f"{s.start}-{s.stop - 1}", s.target, format_seconds(s.latency), why(s), ops))
    widths = [max(len(r[k]) for r in rows) for k in range(3)]
    lines = [
        "  ".join(r[k].ljust(widths[k]) for k in range(3)) + f"  {r[3]}  [{r[4]}]" for r in rows
    ]
    total = result.placement.total
    lines.append(f"placement total: {format_seconds(total)}")
    for t, alone in (singles or {}).items():
        ratio = alone / total if total > 0 else math.nan
        lines.append(
            f"  {t} (with the host) alone: {format_seconds(alone)} ({ratio:.2f}x the placement)"
        )
    if result.whole:
        ways = ", ".join(f"{k} {format_seconds(v)}" for k, v in result.whole.items())
        lines.append(f"  end to end: {ways}; built: {result.chosen}")
    return "\n".join(lines)
