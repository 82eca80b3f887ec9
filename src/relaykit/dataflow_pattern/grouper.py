"""Finding disjoint matches of a pattern in a graph (TVM's ``PatternGrouper``).

Nodes are tried from the graph's result towards its inputs (reverse
post-order); a node already inside an earlier match is not tried again. For
each match, the nodes the pattern's leaves matched become the inputs of the
group (a ``wildcard()`` match, say), except operators, functions, constants
matched by ``is_constant()`` / ``is_expr(const)`` (embedded in the body), and
the nodes a dominator's parent/path or a function pattern's body matched
(they are inside). The group's body is the graph from its root down to its
inputs. A match is rejected when

* it shares a computing node with an earlier match, or
* one of its interior nodes is used outside the match by a node the root does
  not post-dominate (fusing would have to cut a live value out of the match).

When the outside user flows back into the root only, the match is kept and
the interior node is computed both inside and outside (as TVM does).

Everything is iterative and linear in the graph for patterns of bounded size.

>>> from relaykit.ir import Var, TensorType
>>> from relaykit.dataflow_pattern import is_op, wildcard
>>> x = Var("x", TensorType((2,)))
>>> groups = PatternGrouper(is_op("add")(wildcard(), wildcard()), x + x).groups
>>> [g.name for g in groups]
['add_']
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import cast

from relaykit.ir.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from relaykit.ir.functor import post_order, rebuild
from relaykit.ir.op import Op

from .graph import IndexedGraph, graph_children
from .matcher import DFPatternMatcher, NodeMap
from .pattern import (
    AltPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataTypePattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    ShapePattern,
    TuplePattern,
    TypePattern,
    pattern_children,
    pattern_post_order,
)
from .printer import describe_expr

__all__ = ["Group", "Rejection", "PatternGrouper", "PARTITIONED_FROM_PATTERN"]

#: The function attribute naming the ops a partitioned function was made from.
PARTITIONED_FROM_PATTERN = "PartitionedFromPattern"


@dataclass(eq=False)
class Group:
    """One accepted match: ``function(*args)`` computes what ``root`` computed.

    ``nodes`` are the matched nodes copied into the function, in post-order
    (inputs excluded); ``name`` is its ``PartitionedFromPattern`` value. The
    function is built on first use.
    """

    gid: int
    root: Expr
    args: list[Expr]
    name: str
    nodes: list[Expr] = field(repr=False)
    node_map: NodeMap = field(repr=False)
    graph_number: int = field(default=0, repr=False)

    @cached_property
    def params(self) -> list[Var]:
        """One fresh variable per input, named as TVM names them."""
        return [Var(f"FunctionVar_{self.graph_number}_{i}") for i in range(len(self.args))]

    @cached_property
    def body(self) -> Expr:
        """The matched nodes rebuilt over :attr:`params`."""
        sub: dict[Expr, Expr] = dict(zip(self.args, self.params, strict=True))
        lookup = sub.__getitem__
        for node in self.nodes:
            sub[node] = rebuild(node, lookup)
        return sub[self.root]

    @cached_property
    def function(self) -> Function:
        """``fn (params) { body }``, without attributes."""
        return Function(self.params, self.body)


@dataclass(frozen=True, eq=False)
class Rejection:
    """A match that was found at ``root`` but not kept, why, and the node at fault."""

    root: Expr
    reason: str
    node: Expr


class PatternGrouper:
    """The accepted matches (:attr:`groups`) and rejected ones (:attr:`rejected`)
    of ``pattern`` in ``expr``; :attr:`group_of` maps every node inside a group
    to its group id."""

    def __init__(self, pattern: DFPattern, expr: Expr, graph: IndexedGraph | None = None) -> None:
        self.pattern = pattern
        self.expr = expr
        self.graph = graph if graph is not None else IndexedGraph(expr)
        self.groups: list[Group] = []
        self.rejected: list[Rejection] = []
        self.group_of: dict[Expr, int] = {}
        self._pattern_nodes = pattern_post_order(pattern)
        self._leaves = {p for p in self._pattern_nodes if not pattern_children(p)}
        self._matcher = DFPatternMatcher(graph=self.graph)
        self._graph_number = 0
        self._visit_nodes()

    def group(self, gid: int) -> Group:
        """The group with id ``gid`` (ids start at 1)."""
        return self.groups[gid - 1]

    def root_group(self, node: Expr) -> Group | None:
        """The group whose root is ``node``, if any."""
        gid = self.group_of.get(node)
        if gid is None:
            return None
        g = self.groups[gid - 1]
        return g if g.root is node else None

    # -- the walk ------------------------------------------------------------------
    def _visit_nodes(self) -> None:
        pre_partitioned: set[Expr] = set()
        matcher = self._matcher
        pattern = self.pattern
        group_of = self.group_of
        root_ops = root_op_names(pattern)
        for node in reversed(self.graph.nodes):
            if node in group_of:
                continue
            if type(node) is Function and PARTITIONED_FROM_PATTERN in node.attrs:
                pre_partitioned.add(node)
                pre_partitioned.update(post_order(node.body))
            if node in pre_partitioned:
                continue
            if root_ops is not None and not (
                type(node) is Call and isinstance(node.op, Op) and node.op.name in root_ops
            ):
                continue  # cannot match: saves a matcher run on most nodes of a big graph
            if matcher.match(pattern, node):
                self._create_group(node, matcher.node_map())

    def _create_group(self, root: Expr, node_map: NodeMap) -> None:
        graph_number = self._graph_number
        self._graph_number += 1
        fuzzy = self._fuzzy_nodes(node_map)
        inputs: set[Expr] = set()
        args: list[Expr] = []
        embed = self._embed_const

        def make_input(node: Expr, leaf: DFPattern) -> None:
            if node in fuzzy or node in inputs or isinstance(node, (Op, Function)):
                return
            if type(node) is Constant and embed(node, leaf):
                return
            inputs.add(node)
            args.append(node)

        for node, leaf in self._input_candidates(node_map):
            make_input(node, leaf)

        nodes, name = _collect(root, inputs)
        reason = self._conflict(root, nodes)
        if reason is not None:
            self.rejected.append(Rejection(root, reason[0], reason[1]))
            return
        gid = len(self.groups) + 1
        self.groups.append(Group(gid, root, args, name, nodes, node_map, graph_number))
        group_of = self.group_of
        for node in nodes:
            group_of[node] = gid

    def _input_candidates(self, node_map: NodeMap) -> Iterator[tuple[Expr, DFPattern]]:
        """The nodes that may become inputs of a group, in order, with the pattern leaf
        that matched them: what a leaf matched, and the fields / arguments that an
        ``is_tuple(None)`` / ``CallPattern(op, None)`` left unconstrained."""
        leaves = self._leaves
        for p in self._pattern_nodes:
            matches = node_map.get(p)
            if not matches:
                continue
            if type(p) is TuplePattern and p.fields is None:
                for m in matches:
                    for f in cast(Tuple, m).fields:
                        yield f, p
            elif type(p) is CallPattern and p.args is None:
                for m in matches:
                    for a in cast(Call, m).args:
                        yield a, p
            elif p in leaves:
                for m in matches:
                    yield m, p

    def _fuzzy_nodes(self, node_map: NodeMap) -> set[Expr]:
        """Nodes matched by a dominator's parent or path, or inside a matched function."""
        fuzzy: set[Expr] = set()
        for p in self._pattern_nodes:
            if type(p) is DominatorPattern:
                for q in (p.parent, p.path):
                    fuzzy.update(node_map.get(q, ()))
            elif type(p) is FunctionPattern:
                for fn in node_map.get(p, ()):
                    fuzzy.update(post_order(cast(Function, fn).body))
        return fuzzy

    def _embed_const(self, node: Expr, leaf: DFPattern) -> bool:
        """Whether the constant ``node`` matched by ``leaf`` is embedded, not a parameter."""
        if type(leaf) is ConstantPattern:
            return True
        if type(leaf) is ExprPattern:
            return type(leaf.expr) is Constant
        if type(leaf) is AltPattern:
            side = leaf.left if DFPatternMatcher(node).match(leaf.left, node) else leaf.right
            return self._embed_const(node, side)
        return False

    def _conflict(self, root: Expr, nodes: list[Expr]) -> tuple[str, Expr] | None:
        """Why the group of ``nodes`` under ``root`` cannot be used, or None."""
        graph = self.graph
        index = graph.index
        graph_nodes = graph.nodes
        root_index = index[root]
        inside = set(nodes)
        group_of = self.group_of
        for node in nodes:
            if isinstance(node, (Op, Function, Constant)):
                continue
            gid = group_of.get(node)
            if gid is not None:
                return (
                    f"the match at {describe_expr(root)} overlaps an earlier match at "
                    f"{describe_expr(self.group(gid).root)}",
                    node,
                )
            if node is root:
                continue
            for user in graph.outputs[index[node]]:
                if graph_nodes[user] not in inside and not graph.dominates(root_index, user):
                    return (
                        f"the match at {describe_expr(root)} would cut {describe_expr(node)} "
                        f"out of the graph: it is also used by {describe_expr(graph_nodes[user])}"
                        ", outside the match",
                        node,
                    )
        return None


def root_op_names(pattern: DFPattern) -> frozenset[str] | None:
    """The operator names a node must call to match ``pattern``, or None if not known.

    ``is_op("nn.relu")(...)`` needs a call to ``nn.relu``; an alternative needs
    one of its sides' ops. ``divide``/``multiply`` patterns may match each
    other's calls (association), so they say nothing.
    """
    if isinstance(pattern, (AttrPattern, TypePattern, DataTypePattern, ShapePattern)):
        return root_op_names(pattern.pattern)
    if type(pattern) is DominatorPattern:
        return root_op_names(pattern.child)
    if type(pattern) is AltPattern:
        left = root_op_names(pattern.left)
        right = root_op_names(pattern.right)
        return None if left is None or right is None else left | right
    if type(pattern) is CallPattern:
        op = pattern.op
        if type(op) is ExprPattern and isinstance(op.expr, Op):
            name = op.expr.name
            return None if name in ("divide", "multiply") else frozenset((name,))
        if isinstance(op, AltPattern):
            names = []
            for side in (op.left, op.right):
                if not (type(side) is ExprPattern and isinstance(side.expr, Op)):
                    return None
                names.append(side.expr.name)
            return None if {"divide", "multiply"} & set(names) else frozenset(names)
    return None


def _collect(root: Expr, inputs: set[Expr]) -> tuple[list[Expr], str]:
    """The nodes from ``root`` down to (excluding) ``inputs``, in post-order, and the
    ``PartitionedFromPattern`` name: op names in that order, each followed by ``_``."""
    if root in inputs:
        return [], ""
    order: list[Expr] = []
    parts: list[str] = []
    visited: set[Expr] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            parts.append(_name_part(node))
            continue
        if node in visited:
            continue
        visited.add(node)
        stack.append((node, True))
        for child in reversed(_mutator_children(node)):
            if child not in visited and child not in inputs:
                stack.append((child, False))
    return order, "".join(parts)


def _mutator_children(node: Expr) -> tuple[Expr, ...]:
    """Children in the order TVM's ``ExprMutator`` visits them (names follow it)."""
    if type(node) is Let:
        return (node.var, node.value, node.body)
    return graph_children(node)


def _name_part(node: Expr) -> str:
    if type(node) is Call:
        return f"{node.op.name}_" if isinstance(node.op, Op) else "Call_"
    if type(node) is Tuple:
        return "Tuple_"
    if type(node) is TupleGetItem:
        return f"TupleGetItem{node.index}_"
    if type(node) is Function:
        return "Function"
    if type(node) is Let:
        return "Let_"
    if type(node) is If:
        return "If_"
    return ""
