"""An indexed dataflow graph with a post-dominator tree (TVM's ``IndexedGraph``).

Nodes are numbered in post-order (inputs before users). Each node knows its
inputs and outputs (users), and its immediate post-dominator: the node through
which every path from it to the graph's result passes. An Euler tour of the
post-dominator tree answers "does ``a`` post-dominate ``b``?" in constant time.
Everything is built iteratively, in time linear in the graph (plus the walks
that find common post-dominators of nodes with several users).

>>> from relaykit.ir import Var, TensorType
>>> x = Var("x", TensorType((2,)))
>>> y = x + x
>>> g = IndexedGraph(y)
>>> g.dominates(g.index[y], g.index[x])
True
"""

from __future__ import annotations

from relaykit.ir.expr import Call, Expr, Function, If, Let, Tuple, TupleGetItem
from relaykit.ir.op import Op

__all__ = ["IndexedGraph", "graph_children"]


def graph_children(node: Expr) -> tuple[Expr, ...]:
    """The inputs of ``node`` in the order TVM's indexed graph records them."""
    if type(node) is Call:
        return (node.op, *node.args)
    if type(node) is Tuple:
        return node.fields
    if type(node) is TupleGetItem:
        return (node.tuple_value,)
    if type(node) is Function:
        return (*node.params, node.body)
    if type(node) is Let:
        return (node.value, node.var, node.body)
    if type(node) is If:
        return (node.cond, node.true_branch, node.false_branch)
    return ()


class IndexedGraph:
    """Post-order numbering, use lists and post-dominators of the graph under ``root``.

    Operator nodes (``Op``) take part in the numbering but not in the
    post-dominator tree: they are shared by every call of the operator and
    are never a producer of data.
    """

    def __init__(self, root: Expr) -> None:
        self.root = root
        self.nodes: list[Expr] = []
        self.index: dict[Expr, int] = {}
        self.inputs: list[list[int]] = []
        self.outputs: list[list[int]] = []
        self._number(root)
        self._post_dominators()

    def __len__(self) -> int:
        return len(self.nodes)

    # -- construction ------------------------------------------------------------
    def _number(self, root: Expr) -> None:
        nodes, index = self.nodes, self.index
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                if node not in index:
                    index[node] = len(nodes)
                    nodes.append(node)
                continue
            if node in index:
                continue
            stack.append((node, True))
            for child in reversed(graph_children(node)):
                if child not in index:
                    stack.append((child, False))
        inputs: list[list[int]] = [[] for _ in nodes]
        outputs: list[list[int]] = [[] for _ in nodes]
        for i, node in enumerate(nodes):
            for child in graph_children(node):
                c = index[child]
                inputs[i].append(c)
                outputs[c].append(i)
        self.inputs, self.outputs = inputs, outputs

    def _post_dominators(self) -> None:
        n = len(self.nodes)
        parent = [-1] * n
        depth = [0] * n
        nodes = self.nodes
        for i in range(n - 1, -1, -1):
            if i == n - 1 or type(nodes[i]) is Op:
                depth[i] = 1
                continue
            users = self.outputs[i]
            p = users[0] if users else -1
            for u in users[1:]:
                p = self._lca(p, u, parent, depth)
            parent[i] = p
            depth[i] = depth[p] + 1 if p >= 0 else 1
        self.dom_parent = parent
        self.dom_depth = depth
        children: list[list[int]] = [[] for _ in range(n)]
        for i in range(n):
            if parent[i] >= 0:
                children[parent[i]].append(i)
        self.dom_children = children
        # Euler tour of the post-dominator forest for O(1) ancestor queries.
        tin = [0] * n
        tout = [0] * n
        clock = 0
        for start in range(n - 1, -1, -1):
            if parent[start] >= 0:
                continue
            stack = [(start, False)]
            while stack:
                node, done = stack.pop()
                if done:
                    tout[node] = clock
                    continue
                clock += 1
                tin[node] = clock
                stack.append((node, True))
                for c in children[node]:
                    stack.append((c, False))
        self._tin, self._tout = tin, tout

    @staticmethod
    def _lca(a: int, b: int, parent: list[int], depth: list[int]) -> int:
        while a != b:
            if a < 0 or b < 0:
                return -1
            if depth[a] < depth[b]:
                b = parent[b]
            elif depth[a] > depth[b]:
                a = parent[a]
            else:
                a, b = parent[a], parent[b]
        return a

    # -- queries -------------------------------------------------------------------
    def dominates(self, a: int, b: int) -> bool:
        """Whether node ``a`` strictly post-dominates node ``b`` (indices)."""
        return a != b and self._tin[a] < self._tin[b] and self._tout[b] <= self._tout[a]

    def input_nodes(self, node: Expr) -> list[Expr]:
        """The inputs of ``node`` (with repeats), as expressions."""
        nodes = self.nodes
        return [nodes[i] for i in self.inputs[self.index[node]]]
