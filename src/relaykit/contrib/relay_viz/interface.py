"""``tvm.contrib.relay_viz.interface``: what a visualizer's parts agree on.

A parser turns each Relay node into a :class:`VizNode` and the :class:`VizEdge` s
that enter it; a :class:`VizGraph` collects them; a :class:`Plotter` makes one
graph per global function and renders them all.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> y = relay.exp(x)
>>> node, edges = DefaultVizParser().get_node_edges(y, {}, {x: "0", y: "1"})
>>> node.type_name, node.detail, edges
('Call', 'exp', [VizEdge('0' -> '1')])
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any

from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    checked_type_or_none,
)
from relaykit.ir.op import Op

__all__ = ["VizNode", "VizEdge", "VizParser", "VizGraph", "Plotter", "DefaultVizParser"]


class VizNode:
    """One node to draw: a unique id, a type name (its title) and a detail text."""

    def __init__(self, node_id: str, node_type: str, node_detail: str) -> None:
        self._id = node_id
        self._type = node_type
        self._detail = node_detail

    @property
    def identity(self) -> str:
        return self._id

    @property
    def type_name(self) -> str:
        return self._type

    @property
    def detail(self) -> str:
        return self._detail

    def __repr__(self) -> str:
        return f"VizNode(id={self._id!r}, type={self._type!r}, detail={self._detail!r})"


class VizEdge:
    """An edge from the node with id ``start_node`` to the one with id ``end_node``."""

    def __init__(self, start_node: str, end_node: str) -> None:
        self._start = start_node
        self._end = end_node

    @property
    def start(self) -> str:
        return self._start

    @property
    def end(self) -> str:
        return self._end

    def __repr__(self) -> str:
        return f"VizEdge({self._start!r} -> {self._end!r})"


class VizParser(abc.ABC):
    """Turns one Relay node into a VizNode (or None to hide it) and its incoming edges."""

    @abc.abstractmethod
    def get_node_edges(
        self, node: Expr, relay_param: Mapping[str, Any], node_to_id: Mapping[Expr, str]
    ) -> tuple[VizNode | None, list[VizEdge]]:
        """The node to draw for ``node`` and the edges into it."""


class VizGraph(abc.ABC):
    """A graph being built: nodes are added before the edges that reach them."""

    @abc.abstractmethod
    def node(self, viz_node: VizNode) -> None:
        """Add a node."""

    @abc.abstractmethod
    def edge(self, viz_edge: VizEdge) -> None:
        """Add an edge between two nodes already added."""


class Plotter(abc.ABC):
    """Makes the graphs (one per global function) and renders them."""

    @abc.abstractmethod
    def create_graph(self, name: str) -> VizGraph:
        """A new, empty graph named ``name``."""

    @abc.abstractmethod
    def render(self, filename: str | None = None) -> None:
        """Draw every graph (to ``filename`` when given)."""


def _type_text(expr: Expr) -> str:
    ty = checked_type_or_none(expr) or getattr(expr, "type_annotation", None)
    return f"\n{ty}" if ty is not None else ""


class DefaultVizParser(VizParser):
    """One node per variable, constant, call, tuple, projection, function, let and if;
    operators are shown inside their calls rather than as nodes of their own."""

    def get_node_edges(
        self, node: Expr, relay_param: Mapping[str, Any], node_to_id: Mapping[Expr, str]
    ) -> tuple[VizNode | None, list[VizEdge]]:
        if isinstance(node, Op):
            return None, []
        node_id = node_to_id[node]
        leaf = _leaf_detail(node, relay_param)
        if leaf is not None:
            return VizNode(node_id, *leaf), []
        kind, detail, inputs = _inner_node(node)
        return VizNode(node_id, kind, detail), _edges(inputs, node_id, node_to_id)


def _leaf_detail(node: Expr, relay_param: Mapping[str, Any]) -> tuple[str, str] | None:
    """(type name, detail) of a node without inputs; None for other nodes."""
    if isinstance(node, Var):
        kind = "Var(Param)" if node.name_hint in relay_param else "Var(Input)"
        return kind, f"name_hint: {node.name_hint}{_type_text(node)}"
    if isinstance(node, GlobalVar):
        return "GlobalVar", f"name_hint: {node.name_hint}"
    if isinstance(node, Constant):
        data = node.data.numpy()
        return "Const", f"shape: {data.shape}, dtype: {data.dtype}"
    return None


def _inner_node(node: Expr) -> tuple[str, str, list[Expr]]:
    """(type name, detail, inputs) of a node with inputs."""
    if isinstance(node, Call):
        if isinstance(node.op, Op):
            attrs = getattr(node, "attrs", None)
            return "Call", node.op.name + (f"\n{attrs}" if attrs else ""), list(node.args)
        name = getattr(node.op, "name_hint", type(node.op).__name__)
        return "Call", name, [node.op, *node.args]
    if isinstance(node, Tuple):
        return "Tuple", "", list(node.fields)
    if isinstance(node, TupleGetItem):
        return "TupleGetItem", f"idx: {node.index}", [node.tuple_value]
    if isinstance(node, Function):
        return "Function", "", [node.body]
    if isinstance(node, Let):
        return "Let", f"var: {node.var.name_hint}", [node.value, node.body]
    if isinstance(node, If):
        return "If", "", [node.cond, node.true_branch, node.false_branch]
    return type(node).__name__, "", []


def _edges(inputs: Any, node_id: str, node_to_id: Mapping[Expr, str]) -> list[VizEdge]:
    return [VizEdge(node_to_id[x], node_id) for x in inputs if x in node_to_id]
