"""tvm.contrib.relay_viz: every node of every global function reaches the plotter,
with the edges of the expression graph; custom parsers and graphs plug in."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.contrib import relay_viz
from relaykit.contrib.relay_viz.interface import VizEdge, VizNode, VizParser
from relaykit.contrib.relay_viz.terminal import TermGraph, TermPlotter, TermVizParser
from relaykit.errors import ArgumentError


class RecordingGraph(TermGraph):
    def __init__(self, name):
        super().__init__(name)
        self.nodes, self.edges = [], []

    def node(self, viz_node):
        super().node(viz_node)
        self.nodes.append(viz_node)

    def edge(self, viz_edge):
        super().edge(viz_edge)
        self.edges.append((viz_edge.start, viz_edge.end))


class RecordingPlotter(TermPlotter):
    def create_graph(self, name):
        self._name_to_graph[name] = RecordingGraph(name)
        return self._name_to_graph[name]


def _module():
    x = relay.var("x", shape=(2, 3))
    w = relay.var("w", shape=(2, 3))
    s = relay.add(x, w)
    body = relay.Tuple([relay.exp(s), relay.negative(s)])
    return tvm.IRModule.from_expr(relay.Function([x, w], relay.TupleGetItem(body, 1)))


def test_nodes_and_edges_follow_the_expression_graph():
    plotter = RecordingPlotter()
    params = {"w": tvm.nd.array(np.ones((2, 3), "float32"))}
    relay_viz.RelayVisualizer(_module(), params, plotter).render(filename="/dev/null")
    graph = plotter._name_to_graph["main"]
    by_id = {n.identity: n for n in graph.nodes}
    kinds = sorted(n.type_name for n in graph.nodes)
    # x, w (a parameter), add shared by exp and negative, the tuple, the projection, the function
    assert kinds == sorted(
        ["Var(Input)", "Var(Param)", "Call", "Call", "Call", "Tuple", "TupleGetItem", "Function"]
    )
    add_id = next(i for i, n in by_id.items() if n.detail == "add")
    assert sum(1 for s, _ in graph.edges if s == add_id) == 2  # one node, two readers
    assert {by_id[e].detail for s, e in graph.edges if s == add_id} == {"exp", "negative"}


def test_terminal_render_shows_each_function(capsys):
    relay_viz.RelayVisualizer(_module()).render()
    text = capsys.readouterr().out
    assert text.startswith("@main\n`-- Function\n    `-- TupleGetItem idx: 1")
    assert "(node" in text  # the shared add is printed once, then referenced


def test_custom_parser_replaces_nodes():
    class VarsOnly(VizParser):
        def __init__(self):
            self.inner = TermVizParser()

        def get_node_edges(self, node, relay_param, node_to_id):
            if isinstance(node, relay.Var):
                return VizNode(node_to_id[node], "V", node.name_hint), []
            return self.inner.get_node_edges(node, relay_param, node_to_id)

    plotter = RecordingPlotter()
    relay_viz.RelayVisualizer(_module(), {}, plotter, VarsOnly())
    names = [n.detail for n in plotter._name_to_graph["main"].nodes if n.type_name == "V"]
    assert sorted(names) == ["w", "x"]


def test_bad_edge_and_bad_module_are_typed_errors():
    graph = TermGraph("g")
    graph.node(VizNode("a", "Var", ""))
    with pytest.raises(ArgumentError, match="names node 'b'"):
        graph.edge(VizEdge("a", "b"))
    with pytest.raises(ArgumentError, match="IRModule"):
        relay_viz.RelayVisualizer(relay.var("x"))


def test_deep_chain_renders_without_recursion():
    x = relay.var("x", shape=(1,))
    y = x
    for _ in range(5000):
        y = relay.negative(y)
    plotter = TermPlotter()
    relay_viz.RelayVisualizer(tvm.IRModule.from_expr(relay.Function([x], y)), {}, plotter)
    assert plotter._name_to_graph["main"].render().count("negative") == 5000
