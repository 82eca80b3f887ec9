"""Sub-graphs of a dataflow graph given by node indexes, checked and cut out as functions.

Collage's unit of placement (TVM's ``relay.collage`` sub-graphs): a set of nodes of a
function's :class:`~relaykit.dataflow_pattern.graph.IndexedGraph`, named by their
post-order indexes (parameters first, an operator before its arguments; see
:func:`capture_post_dfs_index_in_spans` to print them). From the set follow

- *entries*: inside nodes with an input from outside (an operator, a function or a
  scalar constant is copied in and does not count);
- *exits*: inside nodes used outside (or the graph's result);
- *inputs* / *outputs*: the outside nodes feeding / fed by the sub-graph.

A sub-graph is valid under :class:`SubGraphConfig` when it has at most ``max_exits``
exits, no exit is also used inside unless ``allow_taps`` (a "tap"), nested sub-graphs
are disjoint subsets of it, and no output flows back into an entry (cutting it out
would make a cycle). :func:`partition_sub_graph` replaces a valid sub-graph by a call
of a new function carrying the given attributes (``Compiler=...``); its parameters
are the inputs in the order met walking back from the last exit, its result the
exits in graph order (a tuple when there are several), and each nested sub-graph
becomes a ``Composite`` function inside it. ``PartitionForTesting`` (TVM's global
function ``relay.collage.PartitionForTesting``) is the pass form.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> a, b = relay.var("a", shape=(2,)), relay.var("b", shape=(2,))
>>> mod = IRModule.from_expr(relay.Function([a, b], relay.nn.relu(relay.add(a, b))))
>>> mod = PartitionForTesting(1, False, "foo", [4, 5], ["", ""])(mod)  # add(a, b), relu
>>> mod["main"].body.op.attrs["Compiler"]
'foo'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relaykit.dataflow_pattern.graph import IndexedGraph
from relaykit.errors import ArgumentError
from relaykit.ir.adt import Constructor
from relaykit.ir.expr import Call, Constant, Expr, Function, Span, Tuple, TupleGetItem, Var
from relaykit.ir.functor import children, post_order, rebuild
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.runtime.registry import register_func
from relaykit.transform.infer_type import infer_module
from relaykit.transform.pass_infra import Pass, module_pass

__all__ = [
    "SubGraph",
    "SubGraphConfig",
    "NestedSubGraph",
    "partition_sub_graph",
    "extract_function",
    "rewrite_sub_graphs",
    "can_inline",
    "PartitionForTesting",
    "CapturePostDfsIndexInSpans",
    "capture_post_dfs_index_in_spans",
]


def can_inline(expr: Expr) -> bool:
    """Whether ``expr`` is copied into a sub-graph rather than passed in: an operator, a
    constructor, a function, or a constant scalar."""
    if isinstance(expr, (Op, Constructor, Function)):
        return True
    return isinstance(expr, Constant) and np.ndim(expr.data.numpy()) == 0


@dataclass(frozen=True)
class SubGraphConfig:
    """Limits on a sub-graph: ``max_exits`` (0: any number), ``allow_taps`` (an exit may
    also be used inside) and ``max_depth`` (0: any; the longest entry-to-exit path)."""

    max_exits: int = 0
    allow_taps: bool = False
    max_depth: int = 0


@dataclass(frozen=True)
class NestedSubGraph:
    """A sub-graph to cut out inside an enclosing one, as a function with ``attrs``."""

    inside: frozenset[int]
    attrs: Mapping[str, Any]
    nested: tuple[NestedSubGraph, ...] = field(default=())


class SubGraph:
    """The nodes ``inside`` of ``graph`` with their entries, exits, inputs and outputs."""

    def __init__(self, graph: IndexedGraph, inside: Iterable[int]) -> None:
        self.graph = graph
        self.inside = frozenset(int(i) for i in inside)
        n = len(graph.nodes)
        bad = [i for i in self.inside if not 0 <= i < n]
        if bad:
            raise ArgumentError(f"sub-graph indexes {sorted(bad)} are outside 0..{n - 1}")
        nodes, ins, outs = graph.nodes, graph.inputs, graph.outputs
        self.entry = frozenset(
            i
            for i in self.inside
            if any(j not in self.inside and not can_inline(nodes[j]) for j in ins[i])
        )
        self.exit = frozenset(
            i for i in self.inside if i == n - 1 or any(j not in self.inside for j in outs[i])
        )
        # the neighbours of the inside nodes (not a scan of the graph: sub-graphs are many)
        self.input = frozenset(
            j
            for i in self.inside
            for j in ins[i]
            if j not in self.inside and not can_inline(nodes[j])
        )
        self.output = frozenset(j for i in self.inside for j in outs[i] if j not in self.inside)

    def downstream_of(self, index: int) -> set[int]:
        """Every node reachable from node ``index`` through its users (itself included)."""
        seen = {index}
        stack = [index]
        while stack:
            for u in self.graph.outputs[stack.pop()]:
                if u not in seen:
                    seen.add(u)
                    stack.append(u)
        return seen

    def depth(self) -> int:
        """The number of nodes on the longest path from an entry to an exit."""
        longest: dict[int, int] = {}
        for i in sorted(self.inside):
            preds = [longest[j] for j in self.graph.inputs[i] if j in longest]
            longest[i] = 1 + max(preds, default=0)
        return max((longest[i] for i in self.exit), default=0)

    def invalid_reason(self, config: SubGraphConfig, nested: Sequence[NestedSubGraph] = ()) -> str:
        """Why this sub-graph cannot be cut out under ``config`` ("" when it can)."""
        if config.max_exits > 0 and len(self.exit) > config.max_exits:
            return f"{len(self.exit)} exits exceed the maximum of {config.max_exits}"
        if config.max_depth > 0 and self.depth() > config.max_depth:
            return f"depth {self.depth()} exceeds the maximum of {config.max_depth}"
        union: set[int] = set()
        for sub in nested:
            if not sub.inside <= self.inside:
                return "a nested sub-graph is not a subset of the sub-graph"
            if union & sub.inside:
                return "nested sub-graphs overlap"
            union |= sub.inside
        if not config.allow_taps:
            for i in sorted(self.exit):
                if any(j in self.inside for j in self.graph.outputs[i]):
                    return f"node {i} is used both inside and outside (a tap) and taps are off"
        for o in sorted(self.output):
            if self.downstream_of(o) & self.entry:
                return f"output node {o} flows back into the sub-graph (a cycle)"
        return ""


def _substitute(expr: Expr, replace: Mapping[Expr, Expr]) -> Expr:
    """``expr`` with every node that is a key of ``replace`` (by identity) replaced."""
    if expr in replace:
        return replace[expr]
    memo: dict[Expr, Expr] = {}

    def new(child: Expr) -> Expr:
        hit = replace.get(child)
        return hit if hit is not None else memo[child]

    for node in post_order(expr, skip=lambda n: n in replace):
        memo[node] = rebuild(node, new)
    return memo[expr]


class _Cutter:
    """Rebuilds the nodes ``inside`` a sub-graph of ``graph``; with ``attrs`` (a function
    to be), each outside node it reads becomes a parameter, in the order first met."""

    def __init__(
        self, graph: IndexedGraph, inside: frozenset[int], attrs: Mapping[str, Any] | None
    ) -> None:
        self.graph = graph
        self.inside = inside
        self.attrs = attrs
        self.memo: dict[Expr, Expr] = {}
        self.params: list[Var] = []
        self.args: list[Expr] = []
        self.param_of: dict[Expr, Var] = {}

    def is_inside(self, e: Expr) -> bool:
        return self.graph.index[e] in self.inside

    def outside(self, e: Expr) -> Expr:
        if self.attrs is None or can_inline(e):
            return e
        var = self.param_of.get(e)
        if var is None:
            ty = e.checked_type if e.has_checked_type else None  # nodes built by a rewrite
            if ty is None and isinstance(e, Var):
                ty = e.type_annotation  # a parameter of an enclosing cut-out function
            var = Var(f"FunctionVar_{len(self.params)}", ty)
            self.param_of[e] = var
            self.params.append(var)
            self.args.append(e)
        return var

    def lookup(self, e: Expr) -> Expr:
        return self.memo[e] if self.is_inside(e) else self.outside(e)

    def visit(self, root: Expr) -> Expr:
        """``root`` rebuilt, children first and left to right (an explicit stack, so the
        depth of the graph does not matter)."""
        if not self.is_inside(root):
            return self.outside(root)
        memo = self.memo
        stack: list[tuple[Expr, int]] = [(root, 0)]
        while stack:
            e, k = stack[-1]
            if k == 0 and e in memo:
                stack.pop()
                continue
            if isinstance(e, Function) and e.attrs.get("Primitive"):
                memo[e] = e
                stack.pop()
                continue
            kids = children(e)
            if k < len(kids):
                stack[-1] = (e, k + 1)
                child = kids[k]
                if not self.is_inside(child):
                    self.outside(child)
                elif child not in memo:
                    stack.append((child, 0))
                continue
            memo[e] = rebuild(e, self.lookup)
            stack.pop()
        return memo[root]


def _extract(
    graph: IndexedGraph,
    inside: frozenset[int],
    attrs: Mapping[str, Any] | None,
    nested: Sequence[NestedSubGraph],
) -> tuple[Expr, dict[Expr, Expr]]:
    """The sub-graph ``inside`` cut out of ``graph``: the function carrying ``attrs`` (or,
    when ``attrs`` is None, its body re-expressed with only the nested sub-graphs cut),
    and what each of its exits is replaced by where it is used."""
    nodes = graph.nodes
    cut = _Cutter(graph, inside, attrs)
    memo, params, args, visit = cut.memo, cut.params, cut.args, cut.visit

    last = len(nodes) - 1
    exits: list[Expr] = []
    outputs: list[Expr] = []
    outside_users = {i for i in inside if any(u not in inside for u in graph.outputs[i])}
    for i in sorted(inside, reverse=True):
        e = nodes[i]
        if i in outside_users or i == last or e not in memo:
            outputs.append(visit(e))
            exits.append(e)
    outputs.reverse()
    exits.reverse()
    body: Expr = outputs[0] if len(outputs) == 1 else Tuple(outputs)
    if nested:
        inner = IndexedGraph(body)
        moved = {i: inner.index[memo[nodes[i]]] for i in inside}
        for sub in sorted(
            (_move(sub, moved) for sub in nested), key=lambda s: max(s.inside), reverse=True
        ):
            body = _rewrite(inner, body, sub.inside, sub.attrs, sub.nested)
    if attrs is not None:
        func = Function(params, body, attrs=dict(attrs))
        result: Expr = Call(func, args)
        if len(exits) == 1:
            return func, {exits[0]: result}
        return func, {e: TupleGetItem(result, k) for k, e in enumerate(exits)}
    if len(exits) == 1:
        return body, {exits[0]: body}
    assert isinstance(body, Tuple)
    return body, {e: body.fields[k] for k, e in enumerate(exits)}


def _rewrite(
    graph: IndexedGraph,
    expr: Expr,
    inside: frozenset[int],
    attrs: Mapping[str, Any] | None,
    nested: Sequence[NestedSubGraph],
) -> Expr:
    """``expr`` (``graph``'s expression, or one rewritten from it upstream of ``inside``)
    with the sub-graph ``inside`` cut out: as a call of a function with ``attrs``, or
    re-expressed in place when ``attrs`` is None (only its nested sub-graphs are cut)."""
    _, replace = _extract(graph, inside, attrs, nested)
    return _substitute(expr, replace)


def extract_function(graph: IndexedGraph, sub: NestedSubGraph) -> Function:
    """The nested sub-graph ``sub`` of ``graph`` cut out as a function with its attributes
    (its parameters the inputs in the order met walking back from the last exit, its
    nested sub-graphs cut out inside it), without changing ``graph``'s expression."""
    func, _ = _extract(graph, sub.inside, dict(sub.attrs), sub.nested)
    assert isinstance(func, Function)
    return func


def rewrite_sub_graphs(graph: IndexedGraph, subs: Sequence[NestedSubGraph]) -> Expr:
    """``graph``'s expression with each of the disjoint sub-graphs ``subs`` cut out as a
    call of a function with its attributes (TVM's ``SubGraph::ParallelRewrite``): the
    sub-graph ending last in post-order is cut first, so every node an upstream one
    needs is still where it was."""
    result = graph.root
    for sub in sorted(subs, key=lambda s: max(s.inside), reverse=True):
        result = _rewrite(graph, result, sub.inside, sub.attrs, sub.nested)
    return result


def _move(sub: NestedSubGraph, moved: Mapping[int, int]) -> NestedSubGraph:
    return NestedSubGraph(
        frozenset(moved[i] for i in sub.inside),
        sub.attrs,
        tuple(_move(n, moved) for n in sub.nested),
    )


def partition_sub_graph(
    fn: Function,
    indexes: Iterable[int],
    attrs: Mapping[str, Any],
    config: SubGraphConfig = SubGraphConfig(),
    nested: Mapping[str, Iterable[int]] | None = None,
) -> Function | None:
    """``fn`` with the nodes at ``indexes`` (of its :class:`IndexedGraph`) cut out as a
    function carrying ``attrs``; ``nested`` maps a ``Composite`` label to the indexes of a
    sub-graph cut out inside it. None when the sub-graph is not valid under ``config``."""
    graph = IndexedGraph(fn)
    sub = SubGraph(graph, indexes)
    if not sub.inside:
        raise ArgumentError("partition_sub_graph: no node indexes given")
    inner = tuple(
        NestedSubGraph(SubGraph(graph, idx).inside, {"Composite": label})
        for label, idx in (nested or {}).items()
    )
    if sub.invalid_reason(config, inner):
        return None
    top = NestedSubGraph(sub.inside, dict(attrs), inner)
    out = _rewrite(graph, fn, sub.inside, None, [top])
    assert isinstance(out, Function)
    return out


def PartitionForTesting(
    max_exits: int,
    allow_taps: bool,
    compiler: str,
    indexes: Sequence[int],
    labels: Sequence[str] | None = None,
) -> Pass:
    """TVM's ``relay.collage.PartitionForTesting``: cut the nodes ``indexes`` of ``main``
    out as a ``Compiler=compiler`` function, each index with a non-empty label also into
    a ``Composite=label`` function inside it; ``main`` is left as it is when the
    sub-graph is not valid for ``max_exits`` / ``allow_taps``."""
    idx = [int(i) for i in indexes]
    labs = [str(s) for s in (labels if labels is not None else [""] * len(idx))]
    if len(labs) != len(idx):
        raise ArgumentError(
            f"PartitionForTesting: {len(idx)} indexes but {len(labs)} labels; give one each"
        )
    nested: dict[str, list[int]] = {}
    for i, label in zip(idx, labs, strict=True):
        if label:
            nested.setdefault(label, []).append(i)
    config = SubGraphConfig(max_exits=int(max_exits), allow_taps=bool(allow_taps))

    @module_pass(opt_level=0, name="PartitionForTesting")
    def _pass(mod: IRModule, ctx: Any) -> IRModule:
        typed = infer_module(mod)
        out = partition_sub_graph(typed["main"], idx, {"Compiler": compiler}, config, nested)
        if out is None:
            return mod
        new = typed.copy()
        new["main"] = out
        return infer_module(new)

    return _pass


register_func("relay.collage.PartitionForTesting", PartitionForTesting, override=True)


# -- spans -----------------------------------------------------------------------------------------

_SPANNED = (Call, Tuple, TupleGetItem, Constant, Function, Var)


def capture_post_dfs_index_in_spans(mod: IRModule) -> IRModule:
    """``mod`` with each call, tuple, projection, constant, variable and function of each
    function carrying a span named ``index:<post-order index>:<index of its
    post-dominator>`` (the indexes of :class:`SubGraph`), so that printing the module shows
    them; as in TVM, the span's line is the index and its column the dominator's."""
    funcs = {}
    for gv, fn in mod.items():
        if not isinstance(fn, Function):
            funcs[gv] = fn
            continue
        graph = IndexedGraph(fn)
        memo: dict[Expr, Expr] = {}
        for e in post_order(fn):  # children first, without recursion
            done = rebuild(e, memo.__getitem__)
            if isinstance(e, _SPANNED):
                i = graph.index[e]
                dom = graph.dom_parent[i]
                dom_i = dom if dom >= 0 else i
                span = Span(f"index:{i}:{dom_i}", i, i, dom_i, dom_i)
                done = done.with_fields(span=span) if done is e else _with_span(done, span)
            memo[e] = done
        funcs[gv] = memo[fn]
    typed = all(f.has_checked_type for _, f in mod.items())
    out = mod.copy()
    for gv, new in funcs.items():
        out[gv] = new
    return infer_module(out) if typed else out


def _with_span(e: Expr, span: Span) -> Expr:
    object.__setattr__(e, "span", span)  # ``e`` was built just now by rebuild: not shared
    return e


def CapturePostDfsIndexInSpans() -> Pass:
    """TVM's ``relay.transform.CapturePostDfsIndexInSpans()``: the pass form of
    :func:`capture_post_dfs_index_in_spans`."""

    @module_pass(opt_level=0, name="CapturePostDfsIndexInSpans")
    def _pass(mod: IRModule, ctx: Any) -> IRModule:
        return capture_post_dfs_index_in_spans(mod)

    return _pass
