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
from .drawing import CHAR_WIDTH, draw, graph_layout
from .explain import Report
from .style import HOST, RegionView, human_bytes, human_count, op_runs, regions, target_colors
from .summary import Summary

__all__ = ["render_html", "graph_layout", "CHAR_WIDTH"]


def render_html(report: Report, summary: Summary | None = None, *, title: str | None = None) -> str:
    """The report (and the summary's tables, when given) as one HTML page."""
    name = title or (summary.model if summary is not None else "partition")
    colors = target_colors(report.targets)
    views = regions(report, summary)
    data = {
        "targets": list(report.targets),
        "colors": colors,
        "ops": [
            [
                r.op,
                r.type,
                r.placement,
                r.function,
                r.why,
                r.reasons,
                r.composite,
                r.caller,
                r.attrs,
                r.source,
                list(r.inputs),
                list(r.input_types),
                list(r.operands),
            ]
            for r in report.ops
        ],
        "regions": [
            [v.function, v.target, list(v.ops), human_count(v.macs), human_bytes(v.param_bytes)]
            for v in views
        ],
        "values": [
            [v.kind, v.name, v.type, v.label, v.caller, list(v.inputs), list(v.operands)]
            for v in report.values
        ],
    }
    payload = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(name)} · relaykit partition</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<header><h1>{escape(name)}</h1>{_headline(report, views)}",
        _overview(report, summary, views, colors),
        "</header>",
        '<main><section id="rk-pane"><div id="rk-tools">',
        '<button data-act="fit" title="fit the graph (f)">fit</button>',
        '<button data-act="in" title="zoom in (+)">+</button>',
        '<button data-act="out" title="zoom out (-)">&minus;</button>',
        '<input id="rk-find" type="search" placeholder="find operator, value or function">',
        "</div>",
        draw(report, colors, views),
        '<div id="rk-tip" hidden></div></section>',
        f'<aside id="rk-details">{_panel(views, colors)}</aside></main>',
        '<nav id="rk-below">Below the graph: <a href="#rk-regions-sec">regions</a> · '
        + ('<a href="#rk-summary">summary</a> · ' if summary is not None else "")
        + '<a href="#rk-io">inputs, outputs and weights</a> · '
        '<a href="#rk-ops-sec">every operator</a> &darr;</nav>',
        _region_table(views, colors, report),
        _summary_tables(summary) if summary is not None else "",
        _values_table(report),
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


def _overview(
    report: Report, summary: Summary | None, views: list[RegionView], colors: dict[str, str]
) -> str:
    """The summary above the graph: per target (in its colour) its regions, operators
    and MACs; the host's operators; the model's inputs, weights and outputs."""
    counts = report.placements()
    per: dict[str, int] = {}
    for v in views:
        per[v.target] = per.get(v.target, 0) + 1
    items = []
    for t, c in colors.items():
        extra = ""
        if t != HOST:
            extra = f", {per.get(t, 0)} regions"
            if summary is not None and t in summary.targets:
                extra += f", {human_count(summary.targets[t].macs)} MACs"
        items.append(
            f'<li data-target="{escape(t)}"><span class="rk-sw" style="background:{c}"></span>'
            f"{escape(t)} <small>{counts.get(t, 0)} ops{extra}</small></li>"
        )
    kinds: dict[str, int] = {}
    for value in report.values:
        kinds[value.kind] = kinds.get(value.kind, 0) + 1
    io = ", ".join(
        f"{kinds.get(k, 0)} {k}{'s' if kinds.get(k, 0) != 1 else ''}"
        for k in ("input", "weight", "constant", "output")
    )
    items.append(f'<li class="rk-io"><small>{io}</small></li>')
    return f'<ul class="rk-legend">{"".join(items)}</ul>'


def _region_table(views: list[RegionView], colors: dict[str, str], report: Report) -> str:
    rows = []
    for k, v in enumerate(views):
        names = op_runs([report.ops[i].op for i in v.ops])
        rows.append(
            f'<tr data-region="{k}"><td><span class="rk-sw" style="background:'
            f'{colors.get(v.target, colors[HOST])}"></span><code>{escape(v.function)}</code></td>'
            f"<td>{escape(v.target)}</td><td>{len(v.ops)}</td><td>{human_count(v.macs)}</td>"
            f"<td>{human_bytes(v.param_bytes)}</td><td>{escape(', '.join(v.dtypes) or '-')}</td>"
            f"<td>{escape(names)}</td></tr>"
        )
    pruned = [
        f"<li>{escape(g.target)}: {g.num_ops} ops, {escape(g.pruned or '')}</li>"
        for g in report.regions
        if g.pruned is not None and g.target in colors and g.target != HOST
    ]
    return (
        f'<section id="rk-regions-sec"><h2>Regions ({len(views)})</h2><table id="rk-regions">'
        "<thead><tr><th>function</th><th>target</th><th>ops</th><th>MACs</th>"
        "<th>params</th><th>dtypes</th><th>operators</th></tr></thead><tbody>"
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
        '<section id="rk-summary"><h2>Summary</h2><table><thead><tr><th>placement</th>'
        "<th>functions</th>"
        "<th>ops</th><th>MACs</th><th>params</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table><h3>Operator breakdown</h3><table><thead><tr><th>operator</th>"
        + head
        + "</tr></thead><tbody>"
        + "".join(breakdown)
        + "</tbody></table></section>"
    )


def _values_table(report: Report) -> str:
    """The model's inputs and outputs, and its weights (folded: there may be many)."""

    def rows(kinds: tuple[str, ...]) -> str:
        return "".join(
            f'<tr data-v="{v.index}"><td><code>{escape(v.name)}</code></td><td>{v.kind}</td>'
            f"<td><code>{escape(v.type)}</code></td>"
            f"<td>{escape(v.caller)}</td></tr>"
            for v in report.values
            if v.kind in kinds
        )

    head = "<thead><tr><th>name</th><th>kind</th><th>type</th><th>function</th></tr></thead>"
    weights = sum(v.kind in ("weight", "constant") for v in report.values)
    return (
        f'<section id="rk-io"><h2>Inputs and outputs</h2><table class="rk-vals">{head}<tbody>'
        + rows(("input", "output"))
        + f"</tbody></table><details><summary>Weights and constants ({weights})</summary>"
        + f'<table class="rk-vals">{head}<tbody>'
        + rows(("weight", "constant"))
        + "</tbody></table></details></section>"
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
        f'<section id="rk-ops-sec"><details><summary>Every operator ({len(report.ops)}): '
        "where it went "
        'and why</summary><table id="rk-ops"><thead><tr><th>#</th><th>operator</th>'
        f"<th>placement</th><th>function</th><th>why</th>{head}</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></details></section>"
    )
