"""``tvm.contrib.relay_viz.terminal``: Relay graphs drawn as text trees.

Each global function is printed as a tree from its result down to its inputs; a
node reached a second time is printed once more as a one-line reference.

>>> g = TermGraph("main")
>>> g.node(VizNode("0", "Var(Input)", "name_hint: x"))
>>> g.node(VizNode("1", "Call", "exp"))
>>> g.edge(VizEdge("0", "1"))
>>> print(g.render())
@main
`-- Call exp
    `-- Var(Input) name_hint: x
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from relaykit.errors import ArgumentError
from relaykit.ir.expr import Expr

from .interface import DefaultVizParser, Plotter, VizEdge, VizGraph, VizNode, VizParser

__all__ = ["TermVizParser", "TermNode", "TermGraph", "TermPlotter"]


class TermVizParser(VizParser):
    """The default parser, with one-line details (a terminal tree has no room for more)."""

    def __init__(self) -> None:
        self._default = DefaultVizParser()

    def get_node_edges(
        self, node: Expr, relay_param: Mapping[str, Any], node_to_id: Mapping[Expr, str]
    ) -> tuple[VizNode | None, list[VizEdge]]:
        viz, edges = self._default.get_node_edges(node, relay_param, node_to_id)
        if viz is None:
            return None, edges
        detail = viz.detail.splitlines()[0] if viz.detail else ""
        return VizNode(viz.identity, viz.type_name, detail), edges


class TermNode:
    """A node of a text tree: its title and the ids of the nodes it reads."""

    def __init__(self, viz_node: VizNode) -> None:
        self.type = viz_node.type_name
        self.detail = viz_node.detail.replace("\n", ", ")
        self.inputs: list[str] = []

    @property
    def title(self) -> str:
        return f"{self.type} {self.detail}".rstrip()


class TermGraph(VizGraph):
    """A graph rendered as text: from the last node added (the function's result) down."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._nodes: dict[str, TermNode] = {}
        self._order: list[str] = []

    def node(self, viz_node: VizNode) -> None:
        if viz_node.identity not in self._nodes:
            self._order.append(viz_node.identity)
        self._nodes[viz_node.identity] = TermNode(viz_node)

    def edge(self, viz_edge: VizEdge) -> None:
        for end in (viz_edge.start, viz_edge.end):
            if end not in self._nodes:
                raise ArgumentError(
                    f"relay_viz graph {self._name!r}: edge {viz_edge.start} -> {viz_edge.end} "
                    f"names node {end!r}, which was not added; add nodes before their edges"
                )
        self._nodes[viz_edge.end].inputs.append(viz_edge.start)

    def render(self) -> str:
        """The tree as text (iterative, so any depth of graph prints)."""
        lines = [f"@{self._name}"]
        consumed = {i for n in self._nodes.values() for i in n.inputs}
        roots = [i for i in self._order if i not in consumed] or self._order[-1:]
        shown: set[str] = set()
        stack: list[tuple[str, str, bool]] = [
            (r, "", k == len(roots) - 1) for k, r in reversed(list(enumerate(roots)))
        ]
        while stack:
            node_id, prefix, last = stack.pop()
            node = self._nodes[node_id]
            branch = "`-- " if last else "|-- "
            if node_id in shown and node.inputs:
                lines.append(f"{prefix}{branch}{node.title} (node {node_id}, shown above)")
                continue
            shown.add(node_id)
            lines.append(f"{prefix}{branch}{node.title}")
            child_prefix = prefix + ("    " if last else "|   ")
            for k in reversed(range(len(node.inputs))):
                stack.append((node.inputs[k], child_prefix, k == len(node.inputs) - 1))
        return "\n".join(lines)


class TermPlotter(Plotter):
    """Prints every graph as a text tree, to stdout or to ``filename``."""

    def __init__(self) -> None:
        self._name_to_graph: dict[str, TermGraph] = {}

    def create_graph(self, name: str) -> TermGraph:
        self._name_to_graph[name] = TermGraph(name)
        return self._name_to_graph[name]

    def render(self, filename: str | None = None) -> None:
        text = "\n".join(g.render() for g in self._name_to_graph.values()) + "\n"
        if filename is None:
            sys.stdout.write(text)
        else:
            with open(filename, "w") as f:
                f.write(text)
