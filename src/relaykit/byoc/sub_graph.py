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
from relaykit.ir.functor import rebuild
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
        outside = [i for i in range(n) if i not in self.inside]
        self.input = frozenset(
            i
            for i in outside
            if any(j in self.inside for j in outs[i]) and not can_inline(nodes[i])
        )
        self.output = frozenset(i for i in outside if any(j in self.inside for j in ins[i]))

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
    memo: dict[Expr, Expr] = {}

    def visit(e: Expr) -> Expr:
        hit = replace.get(e)
        if hit is not None:
            return hit
        done = memo.get(e)
        if done is None:
            done = rebuild(e, visit)
            memo[e] = done
        return done

    return visit(expr)


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
    nodes = graph.nodes
    memo: dict[Expr, Expr] = {}
    params: list[Var] = []
    args: list[Expr] = []
    param_of: dict[Expr, Var] = {}

    def visit(e: Expr) -> Expr:
        if graph.index[e] in inside:
            done = memo.get(e)
            if done is None:
                if isinstance(e, Function) and e.attrs.get("Primitive"):
                    done = e
                else:
                    done = rebuild(e, visit)
                memo[e] = done
            return done
        if attrs is None or can_inline(e):
            return e
        var = param_of.get(e)
        if var is None:
            ty = e.checked_type if e.has_checked_type else None  # nodes built by a rewrite
            var = Var(f"FunctionVar_{len(params)}", ty)
            param_of[e] = var
            params.append(var)
            args.append(e)
        return var

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
        result: Expr = Call(Function(params, body, attrs=dict(attrs)), args)
        if len(exits) == 1:
            replace = {exits[0]: result}
        else:
            replace = {e: TupleGetItem(result, k) for k, e in enumerate(exits)}
    elif len(exits) == 1:
        replace = {exits[0]: body}
    else:
        assert isinstance(body, Tuple)
        replace = {e: body.fields[k] for k, e in enumerate(exits)}
    return _substitute(expr, replace)


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

        def visit(e: Expr, graph: IndexedGraph = graph, memo: dict[Expr, Expr] = memo) -> Expr:
            done = memo.get(e)
            if done is not None:
                return done
            done = rebuild(e, visit)
            if isinstance(e, _SPANNED):
                i = graph.index[e]
                dom = graph.dom_parent[i]
                dom_i = dom if dom >= 0 else i
                span = Span(f"index:{i}:{dom_i}", i, i, dom_i, dom_i)
                done = done.with_fields(span=span) if done is e else _with_span(done, span)
            memo[e] = done
            return done

        funcs[gv] = visit(fn)
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
