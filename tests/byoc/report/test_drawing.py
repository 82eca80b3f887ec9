"""The report's graph as netron draws a model: inputs, weights, constants and outputs as
nodes, tensor types on the edges, attributes and source spans of each operator, and a
box around every region in its target's colour.

Expected values come from the models the tests build (names, shapes, which call reads
which) and from regular expressions over the page, not from the code under test.
"""

from __future__ import annotations

import json
import re

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import explain
from relaykit.byoc.report.layout import layout
from relaykit.byoc.report.visual import analyse, graph_layout, render_html, target_colors


def rules(target: str, *ops: str) -> None:
    for name in ops:
        tvm.ir.register_op_attr(name, f"target.{target}", True)


def conv_model():
    """conv2d(x, w) -> split in two -> (add 1.0, relu): an input, a weight, a scalar
    constant and two outputs, one edge carrying a projection of a tuple."""
    x, w = relay.var("x", shape=(1, 3, 8, 8)), relay.var("w", shape=(4, 3, 3, 3))
    y = relay.split(relay.nn.conv2d(x, w, padding=(1, 1), channels=4), 2, axis=1)
    body = relay.Tuple([relay.add(y[0], relay.const(1.0)), relay.nn.relu(y[1])])
    return tvm.IRModule.from_expr(relay.Function([x, w], body))


def test_explain_reports_inputs_weights_constants_and_outputs():
    rules("a", "nn.conv2d")
    report = explain(conv_model(), "a", weights={"w"})
    values = {v.name: v for v in report.values}
    assert values["x"].kind == "input" and values["x"].type == "float32[1,3,8,8]"
    assert values["w"].kind == "weight" and values["w"].type == "float32[4,3,3,3]"
    const = next(v for v in report.values if v.kind == "constant")
    assert const.label == "1.0" and const.type == "float32[]"
    outs = [v for v in report.values if v.kind == "output"]
    assert [v.name for v in outs] == ["output_0", "output_1"]
    assert [v.type for v in outs] == ["float32[1,2,8,8]"] * 2
    rows = {r.op: r for r in report.ops}
    assert [report.values[k].name for k in rows["nn.conv2d"].operands] == ["x", "w"]
    assert rows["add"].operands == (const.index,)
    assert [o.inputs for o in outs] == [(rows["add"].index,), (rows["nn.relu"].index,)]
    # the edge from split carries the projection read, not split's tuple
    assert rows["add"].inputs == (rows["split"].index,)
    assert rows["add"].input_types == ("float32[1,2,8,8]",)
    assert rows["split"].input_types == ("float32[1,4,8,8]",)
    # attributes, as text, unset ones left out
    attrs = rows["nn.conv2d"].attrs
    assert attrs["padding"] == "(1, 1, 1, 1)" and attrs["channels"] == "4"
    assert attrs["data_layout"] == "NCHW" and "out_layout" not in attrs
    assert rows["split"].attrs["axis"] == "1"
    assert rows["nn.conv2d"].source is None  # built in Python: no span
    data = json.loads(report.to_json())
    assert [v["kind"] for v in data["values"]] == [v.kind for v in report.values]


def test_bound_weights_are_constants_drawn_by_shape():
    x = relay.var("x", shape=(1, 8))
    w = relay.const(np.ones((4, 8), "float32"))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.dense(x, w)))
    report = explain(mod, "a")
    weight = next(v for v in report.values if v.kind == "weight")
    assert weight.label == "4\u00d78" and weight.type == "float32[4,8]"
    assert weight.name.startswith("meta[relay.Constant]")
    assert report.ops[0].operands == (0, weight.index)


def test_source_spans_of_a_module_read_from_text_are_reported():
    mod = tvm.relay.fromtext(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(1, 8), float32], %w: Tensor[(4, 8), float32]) {\n"
        "  %0 = nn.dense(%x, %w);\n"
        "  nn.relu(%0)\n"
        "}\n"
    )
    rules("a", "nn.dense", "nn.relu")
    report = explain(mod, "a", weights={"w"})
    assert [(r.op, r.source) for r in report.ops] == [
        ("nn.dense", "<string>:3:8"),
        ("nn.relu", "<string>:4:3"),
    ]
    page = render_html(report)
    data = json.loads(re.search(r'id="rk-data">(.*?)</script>', page, re.S).group(1))
    assert [op[9] for op in data["ops"]] == ["<string>:3:8", "<string>:4:3"]


def chain_model(blocks: int):
    """A residual chain: per block dense(+weight) -> bias_add(+bias) -> relu -> add."""
    h = relay.var("data", shape=(1, 16))
    params = [h]
    for k in range(blocks):
        w, b = relay.var(f"w{k}", shape=(16, 16)), relay.var(f"b{k}", shape=(16,))
        params += [w, b]
        h = relay.add(relay.nn.relu(relay.nn.bias_add(relay.nn.dense(h, w), b)), h)
    return tvm.IRModule.from_expr(relay.Function(params, h)), {p.name_hint for p in params[1:]}


def test_html_draws_values_edge_types_and_an_outline_per_region():
    mod, weights = chain_model(6)
    rules("gemm", "nn.dense", "nn.bias_add")
    rules("vec", "nn.relu")
    report, summary = analyse(mod, ["gemm", "vec"], params=weights, model="chain")
    page = render_html(report, summary)
    # every input, weight and output is a node of its own, named
    drawn = re.findall(
        r'<g class="val (\w+)" data-v="(\d+)"><rect [^>]*/><text [^>]*>([^<]*)<', page
    )
    assert sorted((k, name) for k, _, name in drawn) == sorted(
        [("input", "data"), ("output", "output")] + [("weight", n) for n in weights]
    )
    # an edge per operand and per operator input, each with its tensor type as a label
    vedges = re.findall(r'<path data-v="(\d+)" data-t="(\d+)"', page)
    assert (
        len(vedges) == sum(len(r.operands) for r in report.ops) == 2 * 6 + 2
    )  # weights; data read by the first dense and add
    labels = page[page.index('<g id="rk-labels">') : page.index('<g id="rk-values">')]
    texts = re.findall(r"<text [^>]*>([^<]*)</text>", labels)
    edges = len(graph_layout(report, values=True).edges)
    assert len(texts) == edges
    assert texts.count("float32[16,16]") == 6  # the dense weights
    assert texts.count("float32[16]") == 6  # the biases
    assert "float32[1,16]" in texts
    # every region outlined, in its target's colour, with its function's name
    colors = target_colors(["gemm", "vec"])
    functions = {r.function: r.placement for r in report.ops if r.function}
    outlines = re.findall(
        r'<g class="rk-region" data-region="\d+" data-fn="([^"]+)" data-target="(\w+)">'
        r'<path class="ro" stroke="(#[0-9a-f]{6})"',
        page,
    )
    assert {fn: t for fn, t, _ in outlines} == functions
    assert all(color == colors[t] for _, t, color in outlines)
    assert len(outlines) == len(functions) == 12
    # the summary above the graph, and the way to the tables below it
    head = page[: page.index("<main>")]
    assert "12 ops, 6 regions" in head and "6 ops, 6 regions" in head
    assert "1 input, 12 weights, 0 constants, 1 output" in head
    nav = page[page.index('<nav id="rk-below">') :]
    for anchor in ("rk-regions-sec", "rk-summary", "rk-io", "rk-ops-sec"):
        assert f'href="#{anchor}"' in nav and f'id="{anchor}"' in page


def test_regions_are_laid_out_side_by_side_in_every_layer():
    mod, weights = chain_model(20)
    rules("gemm", "nn.dense", "nn.bias_add")
    report, _ = analyse(mod, "gemm", params=weights)
    lay = graph_layout(report, values=True)
    n = len(report.ops)
    function = {r.index: r.function for r in report.ops}
    region_of = {
        fn: k for k, fn in enumerate(dict.fromkeys(r.function for r in report.ops if r.function))
    }
    assert len(lay.spans) == len(region_of) == 20
    for fn, k in region_of.items():
        members = {i for i, f in function.items() if f == fn}
        # its weights, read by it alone, sit inside its box
        members |= {
            n + v
            for i in members
            for v in report.ops[i].operands
            if report.values[v].kind == "weight"
        }
        layers = {lay.boxes[i].layer for i in members}
        assert {row[0] for row in lay.spans[k]} == layers
        for layer, x0, x1 in lay.spans[k]:
            for j, b in enumerate(lay.boxes):
                if b.layer == layer and j not in members:
                    assert b.x + b.width <= x0 or b.x >= x1, (fn, j)


def test_layout_groups_keep_their_members_together():
    rng = np.random.default_rng(0)
    n = 200
    edges = [(int(rng.integers(max(0, v - 8), v)), v) for v in range(1, n)]
    groups = [int(g) for g in rng.integers(-1, 6, size=n)]
    lay = layout([40.0] * n, edges, groups=groups)
    for k, rows in lay.spans.items():
        for layer, x0, x1 in rows:
            inside = [v for v, b in enumerate(lay.boxes) if b.layer == layer and x0 <= b.cx <= x1]
            assert all(groups[v] == k for v in inside)
