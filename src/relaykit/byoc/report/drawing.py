"""The partition drawn as SVG, as netron draws a model, with the regions outlined.

Node ``i < len(report.ops)`` of the drawing is operator row ``i``; node
``len(report.ops) + k`` is value ``k`` (an input, a weight, a constant or an
output, :class:`relaykit.byoc.report.explain.ValueReport`). Every edge carries the
tensor type it moves (``float32[1,64,56,56]``) as a label. Each region (a
partitioned function) is laid out side by side in every layer and outlined in its
target's colour; the weights only it reads sit inside its outline.

The SVG holds no event handler: the page's script listens once on the whole drawing.

>>> from relaykit.byoc.report.explain import OpReport, Report, ValueReport
>>> rep = Report(("lib",))
>>> rep.ops.append(OpReport(0, "nn.relu", "?", "lib", "f_0", "ok", {}, operands=(0,)))
>>> rep.values += [ValueReport(0, "input", "x", "float32[1,4]"),
...                ValueReport(1, "output", "output", "float32[1,4]", inputs=(0,))]
>>> svg = draw(rep, target_colors(["lib"]), regions(rep))
>>> svg.count('class="val'), svg.count('class="rk-region"'), svg.count("float32[1,4]")
(2, 1, 2)
"""

from __future__ import annotations

from html import escape

from .explain import Report, ValueReport
from .layout import LAYER_GAP, MARGIN, NODE_HEIGHT, Edge, Layout, layout
from .style import HOST, RegionView, node_label, regions, target_colors, text_color

__all__ = ["CHAR_WIDTH", "graph_layout", "draw", "value_label", "regions", "target_colors"]

#: Width of one character of the node font (11px monospace), for box sizes.
CHAR_WIDTH = 6.7
#: Room around a region's nodes inside its outline, sideways and at its top and bottom.
OUTLINE_PAD = 8.0
OUTLINE_END = 10.0
#: The least width of the joint between a region's boxes in neighbouring layers.
BRIDGE = 12.0


def value_label(v: ValueReport) -> str:
    """The text drawn in a value's box: its name, or a constant's shape or value."""
    return v.label or v.name


def _width(text: str) -> float:
    return max(44.0, CHAR_WIDTH * len(text) + 18.0)


def graph_layout(report: Report, *, values: bool = False) -> Layout:
    """The layout of the report's operators (node ``i`` is ``report.ops[i]``); with
    ``values``, also of its values (node ``len(report.ops) + k`` is
    ``report.values[k]``), each region's nodes kept side by side in every layer."""
    n = len(report.ops)
    widths = [_width(node_label(r)) for r in report.ops]
    edges = [(j, r.index) for r in report.ops for j in r.inputs]
    if not values:
        return layout(widths, edges)
    widths += [_width(value_label(v)) for v in report.values]
    edges += [(n + k, r.index) for r in report.ops for k in r.operands]
    for v in report.values:
        edges += [(j, n + v.index) for j in v.inputs]
        edges += [(n + k, n + v.index) for k in v.operands]
    return layout(widths, edges, groups=_groups(report, regions(report)))


def _groups(report: Report, views: list[RegionView]) -> list[int]:
    """Per node: its region's number, or -1. A weight or constant belongs to the region
    of its consumers when they are all in one region."""
    number = {v.function: k for k, v in enumerate(views)}
    ops = [number.get(r.function, -1) if r.function else -1 for r in report.ops]
    readers: dict[int, set[int]] = {}
    for r in report.ops:
        for k in r.operands:
            readers.setdefault(k, set()).add(ops[r.index])
    for v in report.values:
        for k in v.operands:
            readers.setdefault(k, set()).add(-1)
    vals = []
    for v in report.values:
        seen = readers.get(v.index, set())
        inside = v.kind in ("weight", "constant") and len(seen) == 1
        vals.append(next(iter(seen)) if inside else -1)
    return ops + vals


def tint(color: str, amount: float = 0.13) -> str:
    """``color`` (``#rrggbb``) mixed with white: ``amount`` of it, the rest white."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    mix = (round(255 - (255 - c) * amount) for c in (r, g, b))
    return "#" + "".join(f"{c:02x}" for c in mix)


def draw(report: Report, colors: dict[str, str], views: list[RegionView]) -> str:
    """The SVG drawing of ``report``: outlines, edges, edge labels, values, operators."""
    lay = graph_layout(report, values=True)
    n = len(report.ops)
    w, h = f"{lay.width:.0f}", f"{lay.height:.0f}"
    out = [
        f'<svg id="rk-graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" '
        f'data-width="{w}" data-height="{h}" preserveAspectRatio="xMidYMin meet">',
        '<defs><marker id="rk-arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" '
        'markerHeight="7" markerUnits="userSpaceOnUse" orient="auto">'
        '<path d="M0,0 L8,4 L0,8 z" fill="#8a8f96"/></marker></defs>',
        _outlines(lay, colors, views),
        '<g id="rk-bands">',
    ]
    # a band under the edges inside a region: two neighbouring regions of one target
    # stay apart (the edge between them has no band)
    op_edges = [e for e in lay.edges if e.source < n and e.target < n]
    for e in op_edges:
        fn = report.ops[e.source].function
        if fn is not None and report.ops[e.target].function == fn:
            color = colors.get(report.ops[e.source].placement, colors[HOST])
            out.append(f'<path stroke="{color}" d="{_path(e.points)}"/>')
    out.append('</g><g id="rk-edges">')
    out.extend(
        f'<path data-s="{e.source}" data-t="{e.target}" d="{_path(e.points)}"/>' for e in op_edges
    )
    out.append('</g><g id="rk-vedges">')
    for e in lay.edges:
        if e.source >= n or e.target >= n:
            ends = (f'data-v="{e.source - n}"' if e.source >= n else f'data-s="{e.source}"') + (
                f' data-o="{e.target - n}"' if e.target >= n else f' data-t="{e.target}"'
            )
            out.append(f'<path {ends} d="{_path(e.points)}"/>')
    out.append('</g><g id="rk-labels">')
    out.extend(_edge_label(e, _edge_type(report, e, n)) for e in lay.edges)
    out.append('</g><g id="rk-values">')
    for v, b in zip(report.values, lay.boxes[n:], strict=True):
        cls = f"val {v.kind}"
        rx = 12 if v.kind in ("input", "output") else 3
        out.append(
            f'<g class="{cls}" data-v="{v.index}"><rect x="{b.x:.1f}" y="{b.y:.1f}" '
            f'width="{b.width:.1f}" height="{b.height:.0f}" rx="{rx}"/>'
            f'<text x="{b.cx:.1f}" y="{b.y + b.height / 2:.1f}">{escape(value_label(v))}</text></g>'
        )
    out.append('</g><g id="rk-nodes">')
    for r, b in zip(report.ops, lay.boxes, strict=False):
        fill = colors.get(r.placement, colors[HOST])
        cls = "node comp" if r.composite else "node"
        out.append(
            f'<g class="{cls}" data-i="{r.index}"><rect x="{b.x:.1f}" y="{b.y:.1f}" '
            f'width="{b.width:.1f}" height="{b.height:.0f}" rx="4" fill="{fill}"/>'
            f'<text x="{b.cx:.1f}" y="{b.y + b.height / 2:.1f}" fill="{text_color(fill)}">'
            f"{escape(node_label(r))}</text></g>"
        )
    out.append("</g></svg>")
    return "".join(out)


def _edge_type(report: Report, e: Edge, n: int) -> str:
    """The type an edge carries: what its target reads from its source."""
    if e.source >= n:
        return report.values[e.source - n].type
    if e.target >= n:
        out = report.values[e.target - n]
        return out.type if len(out.inputs) + len(out.operands) == 1 else report.ops[e.source].type
    row = report.ops[e.target]
    k = row.inputs.index(e.source) if e.source in row.inputs else -1
    return row.input_types[k] if 0 <= k < len(row.input_types) else "?"


def _edge_label(e: Edge, text: str) -> str:
    """The type at the middle of the edge, just right of it."""
    pts = e.points
    if len(pts) == 2:
        (x0, y0), (x1, y1) = pts
        x, y = (x0 + x1) / 2, (y0 + y1) / 2
    else:
        x, y = pts[len(pts) // 2]
    return f'<text x="{x + 3:.1f}" y="{y:.1f}">{escape(text)}</text>'


def _outlines(lay: Layout, colors: dict[str, str], views: list[RegionView]) -> str:
    """A box around each region's nodes (one per layer, joined to the next layer's by
    a bridge) in its target's colour: the outline of the joined shape is drawn wide,
    then filled with a light tint that hides the lines inside it."""
    step = NODE_HEIGHT + LAYER_GAP
    out = ['<g id="rk-outlines">']
    for k, view in enumerate(views):
        rows = lay.spans.get(k)
        if not rows:
            continue
        d = []
        for n, (lay_, x0, x1) in enumerate(rows):
            top = MARGIN + lay_ * step
            y0, y1 = top - OUTLINE_END, top + NODE_HEIGHT + OUTLINE_END
            d.append(_rect(x0 - OUTLINE_PAD, y0, x1 + OUTLINE_PAD, y1))
            if n + 1 < len(rows) and rows[n + 1][0] == lay_ + 1:
                # a bridge to the next layer's box, as wide as both boxes share (or
                # across the gap between them when they share nothing)
                b0, b1 = rows[n + 1][1], rows[n + 1][2]
                lo, hi = max(x0, b0), min(x1, b1)
                if hi - lo < 2 * BRIDGE:
                    lo, hi = min(x1, b1) - BRIDGE, max(x0, b0) + BRIDGE
                d.append(_rect(lo, y1 - 1, hi, top + step - OUTLINE_END + 1))
        color = colors.get(view.target, colors[HOST])
        first = rows[0]
        label_y = MARGIN + first[0] * step - OUTLINE_END + 7.5
        path = "".join(d)
        out.append(
            f'<g class="rk-region" data-region="{k}" data-fn="{escape(view.function)}" '
            f'data-target="{escape(view.target)}"><path class="ro" stroke="{color}" d="{path}"/>'
            f'<path class="rf" fill="{tint(color)}" d="{path}"/>'
            f'<text x="{first[1] - OUTLINE_PAD + 3:.1f}" y="{label_y:.1f}" fill="{color}">'
            f"{escape(view.function)}</text></g>"
        )
    out.append("</g>")
    return "".join(out)


def _rect(x0: float, y0: float, x1: float, y1: float) -> str:
    return f"M{x0:.1f},{y0:.1f}H{x1:.1f}V{y1:.1f}H{x0:.1f}Z"


def _path(points: tuple[tuple[float, float], ...]) -> str:
    """Straight vertical runs, and smooth vertical S-curves between them."""
    (x0, y0), rest = points[0], points[1:]
    d = [f"M{x0:.1f},{y0:.1f}"]
    for x1, y1 in rest:
        if abs(x1 - x0) < 0.5:
            d.append(f"L{x1:.1f},{y1:.1f}")
        else:
            m = (y1 - y0) / 2
            d.append(f"C{x0:.1f},{y0 + m:.1f} {x1:.1f},{y1 - m:.1f} {x1:.1f},{y1:.1f}")
        x0, y0 = x1, y1
    return "".join(d)
