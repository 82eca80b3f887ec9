"""``tvm.contrib.relay_viz``: draw the functions of a Relay module.

``RelayVisualizer(mod, params, plotter, parser).render()`` walks every global
function, asks the parser for one node (and its incoming edges) per expression,
and hands them to a graph of the plotter. The default plotter prints text trees
(:mod:`.terminal`); ``parser`` and ``plotter`` are the extension points.

>>> from relaykit import relay
>>> import relaykit as tvm
>>> x = relay.var("x", shape=(2,))
>>> RelayVisualizer(tvm.IRModule.from_expr(relay.Function([x], relay.exp(x)))).render()
@main
`-- Function
    `-- Call exp
        `-- Var(Input) name_hint: x
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relaykit.errors import ArgumentError
from relaykit.ir.expr import Expr
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule

from . import interface, terminal
from .interface import Plotter, VizParser
from .terminal import TermPlotter, TermVizParser

__all__ = ["RelayVisualizer", "interface", "terminal"]


class RelayVisualizer:
    """Builds one graph per global function of ``relay_mod`` (``relay_param``: the
    bound parameters, shown as parameter variables) and renders them."""

    def __init__(
        self,
        relay_mod: IRModule,
        relay_param: Mapping[str, Any] | None = None,
        plotter: Plotter | None = None,
        parser: VizParser | None = None,
    ) -> None:
        if not isinstance(relay_mod, IRModule):
            raise ArgumentError(
                f"RelayVisualizer takes an IRModule, got {type(relay_mod).__name__}; "
                "wrap an expression with tvm.IRModule.from_expr"
            )
        self._plotter = plotter if plotter is not None else TermPlotter()
        self._parser = parser if parser is not None else TermVizParser()
        params = dict(relay_param or {})
        for gvar in sorted(relay_mod.get_global_vars(), key=lambda g: g.name_hint):
            graph = self._plotter.create_graph(gvar.name_hint)
            node_to_id: dict[Expr, str] = {}
            for node in post_order(relay_mod[gvar]):
                node_to_id[node] = str(len(node_to_id))
                viz_node, edges = self._parser.get_node_edges(node, params, node_to_id)
                if viz_node is not None:
                    graph.node(viz_node)
                for edge in edges:
                    graph.edge(edge)

    def render(self, filename: str | None = None) -> Any:
        """Render every graph with the plotter (to ``filename`` when given)."""
        return self._plotter.render(filename)
