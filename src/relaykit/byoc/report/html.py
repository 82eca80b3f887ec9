"""The partition report as one self-contained HTML page.

The page holds everything inline (CSS, an SVG drawing laid out in Python, a
little JavaScript and the report's data as JSON), so it opens offline and can
be mailed around. It shows the graph top-down with every operator coloured by
the target it went to, a legend, pan and zoom (wheel, drag, ``f`` to fit),
the placement and reasons of an operator on hover and click, a table of the
regions (click one to see it in the graph) and the summary tables.

>>> from relaykit.byoc.report.explain import OpReport, Report
>>> rep = Report(("lib",))
>>> rep.ops.append(OpReport(0, "nn.dense", "Tensor[(1, 4), float32]", "lib", "f_0", "ok", {}))
>>> page = render_html(rep, title="tiny")
>>> page.startswith("<!DOCTYPE html>") and "f_0" in page and "<svg" in page
True
"""

from __future__ import annotations

import json
from html import escape

from .assets import SCRIPT, STYLE
from .explain import Report
from .layout import Layout, layout
from .style import (
    HOST,
    RegionView,
    human_bytes,
    human_count,
    node_label,
    op_runs,
    regions,
    target_colors,
    text_color,
)
from .summary import Summary

__all__ = ["render_html", "graph_layout", "CHAR_WIDTH"]

#: Width of one character of the node font (11px monospace), for box sizes.
CHAR_WIDTH = 6.7


def graph_layout(report: Report) -> Layout:
    """The layout of the report's operators (node ``i`` is ``report.ops[i]``)."""
    widths = [max(44.0, CHAR_WIDTH * len(node_label(r)) + 18.0) for r in report.ops]
    edges = [(j, r.index) for r in report.ops for j in r.inputs]
    return layout(widths, edges)


def render_html(report: Report, summary: Summary | None = None, *, title: str | None = None) -> str:
    """The report (and the summary's tables, when given) as one HTML page."""
    name = title or (summary.model if summary is not None else "partition")
    colors = target_colors(report.targets)
    views = regions(report, summary)
    lay = graph_layout(report)
    data = {
        "targets": list(report.targets),
        "colors": colors,
        "ops": [
            [r.op, r.type, r.placement, r.function, r.why, r.reasons, r.composite, r.caller]
            for r in report.ops
        ],
        "regions": [
            [v.function, v.target, list(v.ops), human_count(v.macs), human_bytes(v.param_bytes)]
            for v in views
        ],
    }
    payload = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(name)} · relaykit partition</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<header><h1>{escape(name)}</h1>{_headline(report, views)}{_legend(report, colors)}",
        "</header>",
        '<main><section id="rk-pane"><div id="rk-tools">',
        '<button data-act="fit" title="fit the graph (f)">fit</button>',
        '<button data-act="in" title="zoom in (+)">+</button>',
        '<button data-act="out" title="zoom out (-)">&minus;</button>',
        '<input id="rk-find" type="search" placeholder="find operator or function">',
        "</div>",
        _svg(report, lay, colors),
        '<div id="rk-tip" hidden></div></section>',
        f'<aside id="rk-details">{_panel(views, colors)}</aside></main>',
        _region_table(views, colors, report),
        _summary_tables(summary) if summary is not None else "",
        _op_table(report, colors),
        f'<script type="application/json" id="rk-data">{payload}</script>',
        f"<script>{SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts)


def _panel(views: list[RegionView], colors: dict[str, str]) -> str:
    """The side panel before anything is selected: how to use the page, and the
    regions (click one to see it in the graph)."""
    items = "".join(
        f'<li data-region="{k}"><span class="rk-sw" style="background:'
        f'{colors.get(v.target, colors[HOST])}"></span><code>{escape(v.function)}</code> '
        f"<small>{len(v.ops)} ops</small></li>"
        for k, v in enumerate(views)
    )
    return (
        "<p>Click an operator to see where it went and why; drag to pan, wheel to zoom.</p>"
        f'<h3>Regions ({len(views)})</h3><ul id="rk-reglist">{items}</ul>'
    )


def _headline(report: Report, views: list[RegionView]) -> str:
    counts = report.placements()
    on = ", ".join(f"{counts.get(t, 0)} on {escape(t)}" for t in [*report.targets, HOST])
    return (
        f'<p class="rk-sub">{len(report.ops)} operators: {on}; '
        f"{len(views)} partitioned functions</p>"
    )


def _legend(report: Report, colors: dict[str, str]) -> str:
    counts = report.placements()
    items = []
    for t, c in colors.items():
        items.append(
            f'<li data-target="{escape(t)}"><span class="rk-sw" style="background:{c}"></span>'
            f"{escape(t)} <small>{counts.get(t, 0)} ops</small></li>"
        )
    return f'<ul class="rk-legend">{"".join(items)}</ul>'


def _svg(report: Report, lay: Layout, colors: dict[str, str]) -> str:
    w, h = f"{lay.width:.0f}", f"{lay.height:.0f}"
    out = [
        f'<svg id="rk-graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" '
        f'data-width="{w}" data-height="{h}" preserveAspectRatio="xMidYMin meet">',
        '<defs><marker id="rk-arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" '
        'markerHeight="7" markerUnits="userSpaceOnUse" orient="auto">'
        '<path d="M0,0 L8,4 L0,8 z" fill="#8a8f96"/></marker></defs>',
        '<g id="rk-bands">',
    ]
    # a band under the edges inside a region: two neighbouring regions of one target
    # stay apart (the edge between them has no band)
    for e in lay.edges:
        fn = report.ops[e.source].function
        if fn is not None and report.ops[e.target].function == fn:
            color = colors.get(report.ops[e.source].placement, colors[HOST])
            out.append(f'<path stroke="{color}" d="{_path(e.points)}"/>')
    out.append('</g><g id="rk-edges">')
    for e in lay.edges:
        out.append(f'<path data-s="{e.source}" data-t="{e.target}" d="{_path(e.points)}"/>')
    out.append('</g><g id="rk-nodes">')
    for r, b in zip(report.ops, lay.boxes, strict=True):
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


def _region_table(views: list[RegionView], colors: dict[str, str], report: Report) -> str:
    rows = []
    for k, v in enumerate(views):
        names = op_runs([report.ops[i].op for i in v.ops])
        rows.append(
            f'<tr data-region="{k}"><td><span class="rk-sw" style="background:'
            f'{colors.get(v.target, colors[HOST])}"></span><code>{escape(v.function)}</code></td>'
            f"<td>{escape(v.target)}</td><td>{len(v.ops)}</td><td>{human_count(v.macs)}</td>"
            f"<td>{human_bytes(v.param_bytes)}</td><td>{escape(names)}</td></tr>"
        )
    pruned = [
        f"<li>{escape(g.target)}: {g.num_ops} ops, {escape(g.pruned or '')}</li>"
        for g in report.regions
        if g.pruned is not None and g.target in colors and g.target != HOST
    ]
    return (
        f'<section><h2>Regions ({len(views)})</h2><table id="rk-regions">'
        "<thead><tr><th>function</th><th>target</th><th>ops</th><th>MACs</th>"
        "<th>params</th><th>operators</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + (f"<h3>Regions given back to the host</h3><ul>{''.join(pruned)}</ul>" if pruned else "")
        + "</section>"
    )


def _summary_tables(summary: Summary) -> str:
    rows = [
        f"<tr><td>{escape(name)}</td><td>{len(t.functions)}</td><td>{t.operators}</td>"
        f"<td>{human_count(t.macs)}</td><td>{human_bytes(t.param_bytes)}</td></tr>"
        for name, t in summary.targets.items()
    ]
    rows.append(
        f"<tr><td>{HOST}</td><td>-</td><td>{summary.host_operators}</td>"
        f"<td>{human_count(summary.host_macs)}</td><td>-</td></tr>"
    )
    cols = ["before", HOST, *summary.targets]
    names = sorted(
        set(summary.before) | {k for c in summary.after.values() for k in c},
        key=lambda k: (-summary.before.get(k, 0), k),
    )
    breakdown = []
    for n in names:
        after = [summary.after[c][n] if c in summary.after else 0 for c in cols[1:]]
        cells = [summary.before.get(n, 0), *after]
        breakdown.append(
            f"<tr><td>{escape(n)}</td>" + "".join(f"<td>{v}</td>" for v in cells) + "</tr>"
        )
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    return (
        "<section><h2>Summary</h2><table><thead><tr><th>placement</th><th>functions</th>"
        "<th>ops</th><th>MACs</th><th>params</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table><h3>Operator breakdown</h3><table><thead><tr><th>operator</th>"
        + head
        + "</tr></thead><tbody>"
        + "".join(breakdown)
        + "</tbody></table></section>"
    )


def _op_table(report: Report, colors: dict[str, str]) -> str:
    head = "".join(f"<th>{escape(t)}</th>" for t in report.targets)
    rows = []
    for r in report.ops:
        name = r.op if r.composite is None else f"{r.op} [{r.composite}]"
        reasons = "".join(f"<td>{escape(r.reasons.get(t, ''))}</td>" for t in report.targets)
        rows.append(
            f'<tr data-op="{r.index}"><td>{r.index}</td><td>{escape(name)}</td>'
            f'<td><span class="rk-sw" style="background:{colors.get(r.placement, colors[HOST])}">'
            f"</span>{escape(r.placement)}</td><td>{escape(r.function or '-')}</td>"
            f"<td>{escape(r.why)}</td>{reasons}</tr>"
        )
    return (
        f"<section><details><summary>Every operator ({len(report.ops)}): where it went "
        'and why</summary><table id="rk-ops"><thead><tr><th>#</th><th>operator</th>'
        f"<th>placement</th><th>function</th><th>why</th>{head}</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></details></section>"
    )
