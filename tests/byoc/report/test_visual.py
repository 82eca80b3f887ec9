"""The pictures of a partition: the layered layout, the HTML page and the DOT output.

Expected values come from the test's own bookkeeping (which operator a random graph
feeds into which, the module's operator calls counted directly) and from a small DOT
parser written here, never from the code under test.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import decline, explain, pin
from relaykit.byoc.report.layout import DUMMY_WIDTH, layout
from relaykit.byoc.report.visual import (
    analyse,
    explain_dot,
    explain_html,
    graph_layout,
    render_dot,
    render_html,
    target_colors,
)
from relaykit.dataflow_pattern import is_op, wildcard
from relaykit.errors import IRError
from relaykit.ir import Call, Op, get_op, post_order
from relaykit.testing import resnet

UNARY = ["abs", "negative", "nn.relu", "sigmoid", "tanh"]


def random_model(seed: int, n: int = 40):
    """A random DAG of unary and binary operators; its calls in creation order; and per
    call, the creation indices of the calls it reads."""
    rng = np.random.default_rng(seed)
    x = relay.var("x", shape=(2, 3))
    values = [x]
    made: list[list[int]] = []
    for _ in range(n):
        if len(values) > 1 and rng.random() < 0.35:
            a, b = (int(i) for i in rng.choice(len(values), size=2, replace=False))
            values.append(relay.add(values[a], values[b]))
            ins = [a, b]
        else:
            a = int(rng.integers(max(0, len(values) - 6), len(values)))
            values.append(Call(get_op(UNARY[int(rng.integers(len(UNARY)))]), [values[a]]))
            ins = [a]
        made.append(sorted({i - 1 for i in ins if i > 0}))  # value i > 0 is call i - 1
    read = {i for ins in made for i in ins}
    outs = [values[i + 1] for i in range(n) if i not in read]
    body = outs[0] if len(outs) == 1 else relay.Tuple(outs)
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    return mod, values[1:], made


def rules(target: str, *ops: str) -> None:
    for name in ops:
        tvm.ir.register_op_attr(name, f"target.{target}", True)


# -- explain's edges --------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_report_inputs_are_the_operators_each_call_reads(seed):
    mod, calls, made = random_model(seed)
    rules("a", "abs", "nn.relu")
    rules("b", "add", "tanh")
    report = explain(mod, ["a", "b"])
    assert len(report.ops) == len(calls)
    # rows are numbered in post-order: the row of each created call, found by walking
    # the module (the module holds the very call objects the test created)
    order = [n for n in post_order(mod["main"].body) if isinstance(n, Call)]
    row = {id(c): i for i, c in enumerate(order)}
    assert [order[row[id(c)]].op.name for c in calls] == [report.ops[row[id(c)]].op for c in calls]
    for k, c in enumerate(calls):
        expected = sorted(row[id(calls[j])] for j in made[k])
        assert sorted(report.ops[row[id(c)]].inputs) == expected
    assert {r.placement for r in report.ops} >= {"a", "b", "host"}


def test_inputs_through_composites_tuples_and_let():
    x = relay.var("x", shape=(1, 8))
    a = relay.abs(x)
    r = relay.nn.relu(a)
    t = relay.Tuple([r, relay.negative(x)])
    s = relay.add(relay.TupleGetItem(t, 0), relay.TupleGetItem(t, 1))
    v = relay.var("v", shape=(1, 8))
    # the let-bound variable is read through a tuple: its producer is still found
    body = relay.Let(v, s, relay.nn.softmax(relay.TupleGetItem(relay.Tuple([v, x]), 0)))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    rules("a", "negative")
    table = [("a.abs_relu", is_op("nn.relu")(is_op("abs")(wildcard())))]
    report = explain(mod, "a", table)
    rows = {r.op: r for r in report.ops}
    assert rows["abs"].composite == rows["nn.relu"].composite == "a.abs_relu"
    assert rows["abs"].inputs == ()
    assert rows["nn.relu"].inputs == (rows["abs"].index,)
    assert set(rows["add"].inputs) == {rows["nn.relu"].index, rows["negative"].index}
    assert rows["nn.softmax"].inputs == (rows["add"].index,)


# -- layout -----------------------------------------------------------------------------


def random_dag(seed: int, n: int):
    rng = np.random.default_rng(seed)
    edges = []
    for v in range(1, n):
        for _ in range(int(rng.integers(1, 3))):
            lo = max(0, v - int(rng.integers(1, 25)))
            edges.append((int(rng.integers(lo, v)), v))
    widths = [float(w) for w in rng.integers(30, 160, size=n)]
    return widths, edges


def boxes_overlap(lay) -> list[tuple[int, int]]:
    b = np.array([(x.x, x.y, x.x + x.width, x.y + x.height) for x in lay.boxes])
    hits = []
    for i in range(len(b)):
        sep = (
            (b[i, 2] <= b[i + 1 :, 0])
            | (b[i + 1 :, 2] <= b[i, 0])
            | (b[i, 3] <= b[i + 1 :, 1])
            | (b[i + 1 :, 3] <= b[i, 1])
        )
        hits.extend((i, i + 1 + int(j)) for j in np.flatnonzero(~sep))
    return hits


@pytest.mark.parametrize("seed", range(5))
def test_layout_places_every_node_without_overlap_and_edges_point_down(seed):
    widths, edges = random_dag(seed, 150)
    lay = layout(widths, edges)
    assert len(lay.boxes) == len(widths)
    assert [b.width for b in lay.boxes] == widths
    assert not boxes_overlap(lay)
    for b in lay.boxes:
        assert b.x >= 0 and b.x + b.width <= lay.width
        assert b.y >= 0 and b.y + b.height <= lay.height
    assert sorted((e.source, e.target) for e in lay.edges) == sorted(set(edges))
    for e in lay.edges:
        src, dst = lay.boxes[e.source], lay.boxes[e.target]
        assert dst.layer > src.layer and dst.y > src.y + src.height
        ys = [p[1] for p in e.points]
        assert ys == sorted(ys)  # every segment goes down (or straight through a layer)
        assert ys[0] == src.y + src.height and ys[-1] == dst.y
        assert src.x <= e.points[0][0] <= src.x + src.width
        assert dst.x <= e.points[-1][0] <= dst.x + dst.width


@pytest.mark.parametrize("seed", range(3))
def test_long_edges_bend_around_the_nodes_they_pass(seed):
    widths, edges = random_dag(seed, 120)
    lay = layout(widths, edges)
    for e in lay.edges:
        # the vertical runs between the ends are where the edge passes a layer
        for (x0, y0), (x1, _y1) in zip(e.points[1:-1:2], e.points[2:-1:2], strict=True):
            assert x0 == x1
            for b in lay.boxes:
                if b.y == y0:
                    assert not (b.x - DUMMY_WIDTH / 2 < x0 < b.x + b.width + DUMMY_WIDTH / 2)


def test_very_long_edges_run_in_a_lane_beside_the_graph():
    # a chain of 150 operators, each also reading operator 0 (a transformer's mask)
    n = 150
    edges = [(i, i + 1) for i in range(n - 1)] + [(0, i) for i in range(2, n)]
    lay = layout([60.0] * n, edges)
    assert not boxes_overlap(lay)
    right = max(b.x + b.width for b in lay.boxes)
    for e in lay.edges:
        ys = [p[1] for p in e.points]
        assert ys == sorted(ys)
        inner = e.points[1:-1]
        span = lay.boxes[e.target].layer - lay.boxes[e.source].layer
        if span > 64:
            # the whole run between the ends is right of every operator
            assert inner and all(x > right for x, _ in inner)
            assert lay.width > max(x for x, _ in inner)


def test_layout_keeps_a_chain_straight_and_a_diamond_symmetric():
    chain = layout([60.0] * 5, [(i, i + 1) for i in range(4)])
    assert len({b.cx for b in chain.boxes}) == 1
    assert [b.layer for b in chain.boxes] == [0, 1, 2, 3, 4]
    diamond = layout([60.0] * 4, [(0, 1), (0, 2), (1, 3), (2, 3)])
    top, left, right, bottom = diamond.boxes
    assert left.layer == right.layer == 1 and bottom.layer == 2
    assert abs((left.cx + right.cx) / 2 - top.cx) < 1e-6
    assert abs(bottom.cx - top.cx) < 1e-6


def test_layout_rejects_cycles_and_unknown_nodes():
    with pytest.raises(IRError, match="cycle"):
        layout([10.0, 10.0], [(0, 1), (1, 0)])
    with pytest.raises(IRError, match="outside"):
        layout([10.0], [(0, 3)])


def test_resnet_graph_lays_out_without_overlap():
    net = resnet.get_net(1, 10, num_layers=18, image_shape=(3, 32, 32))
    mod = tvm.IRModule.from_expr(net)
    rules("a", "nn.conv2d", "nn.relu")
    report = explain(mod, "a")
    lay = graph_layout(report)
    assert len(lay.boxes) == len(report.ops)
    assert not boxes_overlap(lay)


# -- HTML -------------------------------------------------------------------------------


def two_target_model():
    x = relay.var("x", shape=(1, 16))
    w1, w2 = relay.var("w1", shape=(16, 16)), relay.var("w2", shape=(8, 16))
    h = relay.nn.relu(relay.nn.dense(x, w1))
    y = relay.sigmoid(relay.nn.dense(relay.tanh(h), w2))
    mod = tvm.IRModule.from_expr(relay.Function([x, w1, w2], relay.nn.softmax(y)))
    rules("cpu_lib", "nn.dense", "nn.relu")
    rules("vec", "tanh", "sigmoid")
    return mod


def svg_nodes(page: str) -> dict[int, str]:
    """The fill of every drawn operator box, by operator row."""
    found = re.findall(
        r'<g class="node[^"]*" data-i="(\d+)"><rect [^>]*fill="(#[0-9a-f]{6})"', page
    )
    return {int(i): fill for i, fill in found}


def test_html_draws_every_operator_in_its_targets_colour():
    mod = two_target_model()
    report, summary = analyse(mod, ["cpu_lib", "vec"], params={"w1", "w2"}, model="two")
    page = render_html(report, summary, title="two targets")
    colors = target_colors(["cpu_lib", "vec"])
    fills = svg_nodes(page)
    expected_ops = sum(
        1 for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)
    )
    assert len(fills) == expected_ops == len(report.ops)
    for r in report.ops:
        assert fills[r.index] == colors[r.placement]
    # each region: its function name in the regions table, every one of its nodes coloured
    functions = {r.function: r.placement for r in report.ops if r.function}
    assert set(functions.values()) == {"cpu_lib", "vec"}
    table = page[page.index('id="rk-regions"') :]
    for fn, target in functions.items():
        assert f"<code>{fn}</code>" in table
        rows = [r.index for r in report.ops if r.function == fn]
        assert {fills[i] for i in rows} == {colors[target]}
    # the legend names every target with its colour
    for t in ("cpu_lib", "vec", "host"):
        assert re.search(
            rf'data-target="{t}"><span class="rk-sw" style="background:{colors[t]}"', page
        )
    # a band under each edge inside a region, in the region's colour, and none elsewhere
    bands = page[page.index('<g id="rk-bands">') : page.index('<g id="rk-edges">')]
    inside = [
        (r.function, r.placement)
        for r in report.ops
        for j in r.inputs
        if r.function is not None and report.ops[j].function == r.function
    ]
    assert len(inside) == 1  # dense -> relu; every other edge crosses a region boundary
    assert sorted(re.findall(r'<path stroke="(#[0-9a-f]{6})"', bands)) == sorted(
        colors[p] for _, p in inside
    )
    # parameter bytes per region: the dense weights, 16*16 and 8*16 float32
    assert "1.0 KB" in table and "512 B" in table
    data = json.loads(re.search(r'id="rk-data">(.*?)</script>', page, re.S).group(1))
    assert [op[0] for op in data["ops"]] == [r.op for r in report.ops]
    assert sorted(r[0] for r in data["regions"]) == sorted(functions)


def test_html_is_self_contained_and_escaped():
    x = relay.var("x", shape=(1, 4))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.abs(x)))
    tvm.ir.register_op_attr("abs", "target.t", lambda call: decline("</script><b>no"))
    page = explain_html(mod, "t", title="<i>t</i>")
    assert "<i>t</i>" not in page and "&lt;i&gt;t&lt;/i&gt;" in page
    assert page.count("</script>") == 2  # the data block and the code block, nothing else
    assert "<b>no" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<link" not in page and "@import" not in page
    data = json.loads(re.search(r'id="rk-data">(.*?)</script>', page, re.S).group(1))
    assert data["ops"][0][5]["t"] == "declined: </script><b>no"


# -- DOT --------------------------------------------------------------------------------

_TOKEN = re.compile(r'\s*(?:(->|[{}\[\];,=])|"((?:[^"\\]|\\.)*)"|([A-Za-z0-9_.#]+))')


def parse_dot(text: str):
    """A small DOT reader: the graph's nodes (with attributes), edges and clusters.
    Raises AssertionError on anything that is not DOT's grammar."""
    toks, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        assert m and m.end() > pos, f"bad DOT at {text[pos : pos + 30]!r}"
        punct, quoted, word = m.groups()
        toks.append(punct or ("ID", quoted if quoted is not None else word))
        pos = m.end()
    i = 0

    def take(expected=None):
        nonlocal i
        tok = toks[i]
        i += 1
        assert expected is None or tok == expected, f"expected {expected}, got {tok}"
        return tok

    def attrs():
        out = {}
        take("[")
        while toks[i] != "]":
            key = take()[1]
            take("=")
            out[key] = take()[1]
            if toks[i] == ",":
                take(",")
        take("]")
        return out

    nodes, edges, clusters = {}, [], {}

    def stmts(cluster):
        while toks[i] != "}":
            tok = take()
            if tok == ("ID", "subgraph"):
                name = take()[1]
                take("{")
                clusters[name] = {"nodes": [], "attrs": {}}
                stmts(name)
                take("}")
            elif tok in (("ID", "graph"), ("ID", "node"), ("ID", "edge")):
                attrs()
            else:
                assert tok[0] == "ID", tok
                if toks[i] == "=":
                    take("=")
                    value = take()[1]
                    if cluster:
                        clusters[cluster]["attrs"][tok[1]] = value
                elif toks[i] == "->":
                    take("->")
                    edges.append((tok[1], take()[1]))
                else:
                    nodes[tok[1]] = attrs() if toks[i] == "[" else {}
                    if cluster:
                        clusters[cluster]["nodes"].append(tok[1])
            if toks[i] == ";":
                take(";")

    take(("ID", "digraph"))
    take()
    take("{")
    stmts(None)
    take("}")
    assert i == len(toks)
    return nodes, edges, clusters


def test_dot_has_a_node_per_operator_and_a_cluster_per_region():
    mod = two_target_model()
    report = explain(mod, ["cpu_lib", "vec"])
    dot = explain_dot(mod, ["cpu_lib", "vec"], params={"w1", "w2"}, title='a "quoted" title')
    nodes, edges, clusters = parse_dot(dot)
    calls = [n for n in post_order(mod["main"].body) if isinstance(n, Call)]
    assert len(nodes) == len(calls) == 6
    assert Counter(a["label"] for a in nodes.values()) == Counter(c.op.name for c in calls)
    # edges: one per operator argument that is an operator call
    assert len(edges) == sum(isinstance(a, Call) for c in calls for a in c.args) == 5
    colors = target_colors(["cpu_lib", "vec"])
    regions = {r.function: r.placement for r in report.ops if r.function}
    assert len(clusters) == len(regions)
    for name, cl in clusters.items():
        assert name.startswith("cluster_")
        fn = cl["attrs"]["label"].split("\\n")[0]
        assert cl["attrs"]["color"] == colors[regions[fn]]
        assert {nodes[n]["fillcolor"] for n in cl["nodes"]} == {colors[regions[fn]]}
    host = [n for n, a in nodes.items() if a["fillcolor"] == colors["host"]]
    assert [nodes[n]["label"] for n in host] == ["nn.softmax"]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_graphviz_draws_the_dot_output():
    net = resnet.get_net(1, 10, num_layers=18, image_shape=(3, 32, 32))
    mod = tvm.IRModule.from_expr(net)
    rules("a", "nn.conv2d", "nn.relu")
    report = explain(mod, "a", pin=[pin("nn.dense")])
    dot = render_dot(report)
    proc = subprocess.run(
        ["dot", "-Tsvg"], input=dot, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count('class="node"') == len(report.ops)
    assert proc.stdout.count('class="cluster"') == len({r.function for r in report.ops} - {None})


def test_a_built_in_backend_is_found_by_name_and_both_views_agree():
    x, w = relay.var("x", shape=(1, 8)), relay.var("w", shape=(4, 8))
    mod = tvm.IRModule.from_expr(relay.nn.relu(relay.nn.dense(x, w)))
    report, summary = analyse(mod, "ccompiler", params={"w"})
    assert report.placements() == {"ccompiler": 2}
    # the functions the explain report names are the ones the summary measured
    assert [f.name for f in summary.targets["ccompiler"].functions] == [report.ops[0].function]
    assert summary.targets["ccompiler"].functions[0].param_bytes == 4 * 8 * 4
    assert summary.targets["ccompiler"].functions[0].macs == 4 * 8
