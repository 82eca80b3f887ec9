"""Pictures of a partition: a self-contained HTML page, and Graphviz DOT.

:func:`explain_html` partitions a module as :func:`relaykit.byoc.partition_for`
would and draws it as netron draws a model: top-down, the model's inputs, weights
and outputs as nodes, tensor types on the edges, every operator coloured by the
target it went to and every region outlined in that colour; an operator's
placement, the reason of every target, its attributes, source and inputs on hover
and click; a summary above the graph, then the regions with their operators, MACs
and parameter bytes, and the summary tables. The page needs no network.
:func:`explain_dot` gives the operators' graph in DOT, one cluster per region. Both reuse
:func:`relaykit.byoc.explain` and :func:`relaykit.byoc.report.summary.summarize`;
:func:`render_html` and :func:`render_dot` draw a report you already have.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> from relaykit.byoc import scoped_registries
>>> x, w = relay.var("x", shape=(1, 8)), relay.var("w", shape=(4, 8))
>>> mod = tvm.IRModule.from_expr(relay.nn.softmax(relay.nn.relu(relay.nn.dense(x, w))))
>>> with scoped_registries():
...     _ = tvm.ir.register_op_attr("nn.dense", "target.lib", True)
...     _ = tvm.ir.register_op_attr("nn.relu", "target.lib", True)
...     page = explain_html(mod, "lib", params={"w"}, title="tiny")
...     dot = explain_dot(mod, "lib", params={"w"})
>>> "tvmgen_default_lib_main_0" in page and "<svg" in page
True
>>> print(dot)  # doctest: +ELLIPSIS
digraph "partition" {
  graph [rankdir=TB, ...];
  ...
  subgraph "cluster_0" {
    label="tvmgen_default_lib_main_0\\nlib: 2 ops, 32 MACs, 128 B params";
    ...
    n0 [label="nn.dense", fillcolor="#4e79a7", ...];
    n1 [label="nn.relu", fillcolor="#4e79a7", ...];
  }
  n2 [label="nn.softmax", fillcolor="#d5d9de", ...];
  n0 -> n1;
  n1 -> n2;
}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from relaykit.byoc.choose import normalize_targets
from relaykit.byoc.targets import configure_target, scoped_registries
from relaykit.ir.module import IRModule

from .explain import Report, explain
from .html import graph_layout, render_html
from .style import HOST, human_bytes, human_count, regions, target_colors, text_color
from .summary import Summary, summarize

__all__ = [
    "analyse",
    "explain_html",
    "explain_dot",
    "render_html",
    "render_dot",
    "graph_layout",
    "target_colors",
]


def analyse(
    mod: IRModule,
    targets: str | Sequence[str],
    *,
    params: Mapping[str, Any] | Iterable[str] | None = None,
    pins: Any = None,
    min_ops: int | None = None,
    min_macs: int | None = None,
    patterns: Sequence[tuple[Any, ...]] | None = None,
    model: str = "model",
) -> tuple[Report, Summary]:
    """:func:`explain` and :func:`summarize` of ``mod`` for ``targets``, with the same
    pins and minimum region size (set for this call only).

    ``params`` are the weights (a dict of arrays, or their names): their bytes count
    as the parameters of the regions that take them.
    """
    names = normalize_targets(targets)
    weights = set(params) if params is not None else None
    with scoped_registries():
        if min_ops is not None or min_macs is not None:
            for t in names:
                configure_target(t, min_region_ops=min_ops, min_region_macs=min_macs)
        report = explain(mod, names, patterns, pin=pins, weights=weights)
        summary = summarize(
            mod, names, patterns=patterns, pin=pins, param_names=weights, model=model
        )
    return report, summary


def explain_html(
    mod: IRModule,
    targets: str | Sequence[str],
    *,
    params: Mapping[str, Any] | Iterable[str] | None = None,
    pins: Any = None,
    min_ops: int | None = None,
    title: str | None = None,
) -> str:
    """The partition of ``mod`` for ``targets`` as a self-contained HTML page."""
    report, summary = analyse(
        mod, targets, params=params, pins=pins, min_ops=min_ops, model=title or "model"
    )
    return render_html(report, summary, title=title)


def explain_dot(
    mod: IRModule,
    targets: str | Sequence[str],
    *,
    params: Mapping[str, Any] | Iterable[str] | None = None,
    pins: Any = None,
    min_ops: int | None = None,
    title: str | None = None,
) -> str:
    """The partition of ``mod`` for ``targets`` as a Graphviz DOT digraph, one
    cluster per region (``dot -Tsvg out.dot > out.svg`` draws it)."""
    report, summary = analyse(mod, targets, params=params, pins=pins, min_ops=min_ops)
    return render_dot(report, summary, title=title)


def _q(text: str) -> str:
    """``text`` as a DOT double-quoted string."""
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{body}"'


def render_dot(report: Report, summary: Summary | None = None, *, title: str | None = None) -> str:
    """``report`` as a DOT digraph: a node per operator row (``n<index>``) filled
    with its target's colour, a cluster per partitioned function, an edge per input."""
    colors = target_colors(report.targets)
    lines = [
        f"digraph {_q(title or 'partition')} {{",
        '  graph [rankdir=TB, fontname="Helvetica", fontsize=11, nodesep=0.25, ranksep=0.35];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, '
        "height=0.3];",
        '  edge [color="#8a8f96", arrowsize=0.6];',
    ]
    legend = ", ".join(f"{t} {c}" for t, c in colors.items())
    caption = f"{title or 'partition'}: {legend}"
    lines.append(f"  label={_q(caption)};")
    placed: set[int] = set()
    for k, view in enumerate(regions(report, summary)):
        color = colors.get(view.target, colors[HOST])
        info = (
            f"{view.target}: {len(view.ops)} ops, {human_count(view.macs)} MACs, "
            f"{human_bytes(view.param_bytes)} params"
        )
        lines.append(f'  subgraph "cluster_{k}" {{')
        lines.append(f"    label={_q(view.function + chr(10) + info)};")
        lines.append(f'    style="rounded,dashed"; color="{color}"; penwidth=1.6;')
        lines.extend(f"    {_node(report, i, colors)}" for i in view.ops)
        lines.append("  }")
        placed.update(view.ops)
    lines.extend(f"  {_node(report, r.index, colors)}" for r in report.ops if r.index not in placed)
    lines.extend(f"  n{j} -> n{r.index};" for r in report.ops for j in r.inputs)
    lines.append("}")
    return "\n".join(lines)


def _node(report: Report, i: int, colors: dict[str, str]) -> str:
    r = report.ops[i]
    fill = colors.get(r.placement, colors[HOST])
    tip = f"#{i} {r.op}: {r.placement} ({r.why})"
    return (
        f"n{i} [label={_q(r.op)}, fillcolor={_q(fill)}, fontcolor={_q(text_color(fill))}, "
        f"tooltip={_q(tip)}];"
    )
