"""Candidate sub-graphs for Collage's search, from partition rules (TVM's Collage rules).

Every node of a function's dataflow graph (:class:`~relaykit.dataflow_pattern.graph.
IndexedGraph`, post-order indexes) must end up in exactly one chosen *candidate*: a
sub-graph, the *spec* (target) that would run it, and the nested sub-graphs it is cut
into (a ``Primitive``/``Compiler`` function around ``Composite`` functions for an
external codegen). Candidates come from rules:

- the host: every node that need not be lowered (variables, operators, tuples,
  constants...) on its own, at no cost;
- a compiler target (a ``llvm``-like kind): every operator call, then unions of
  touching candidates by the fusion rules of ``FuseOps`` (an elementwise/broadcast
  producer into a broadcast consumer, reductions after broadcasts, injective chains),
  tuple arguments and tuple projections, up to ``relay.collage.tvm_max_depth``, with
  one exit and no taps;
- an external codegen: each entry of its pattern table (a ``Composite`` function per
  match; a backend without a table offers each operator call its rules accept), then
  unions of any touching candidates up to ``relay.collage.byoc_max_depth``, with one
  exit and no taps, each wrapped in a ``Primitive`` function with ``Compiler=<name>``.

:func:`prune_candidates` then keeps the maximal candidates of each spec and, where
those overlap, the candidates they had hidden.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from relaykit.byoc.sub_graph import NestedSubGraph, SubGraph, SubGraphConfig, can_inline
from relaykit.dataflow_pattern.graph import IndexedGraph
from relaykit.dataflow_pattern.matcher import DFPatternMatcher
from relaykit.dataflow_pattern.pattern import DFPattern, WildcardPattern
from relaykit.ir.adt import Constructor
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
from relaykit.ir.op import Op, default_registry
from relaykit.ir.types import TensorType, TupleType
from relaykit.op.define import OpPattern

__all__ = [
    "Candidate",
    "Dataflow",
    "host_candidates",
    "compiler_candidates",
    "external_candidates",
    "prune_candidates",
    "disjoint_union",
    "are_touching",
    "union_labels",
    "FUSION_STYLES",
    "DEFAULT_FUSION_STYLES",
]

ELEMWISE, BROADCAST, INJECTIVE = OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.INJECTIVE
COMM_REDUCE, FUSABLE, OPAQUE = (
    OpPattern.COMM_REDUCE,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    OpPattern.OPAQUE,
)

#: Operators that compute nothing and stay with the host.
_SPECIAL = ("shape_of", "vm.shape_of", "device_copy", "on_device")


def union_labels(left: str, right: str) -> str:
    """Two labels joined with ``+`` (an empty one drops out)."""
    return right if not left else left if not right else f"{left}+{right}"


def _nest_labels(outer: str, inner: str) -> str:
    if not outer:
        return inner
    if not inner:
        return outer
    return inner if inner.startswith(outer) and len(inner) > len(outer) else f"{outer}.{inner}"


def _all_tensors(typ: Any) -> bool:
    return isinstance(typ, TupleType) and all(isinstance(f, TensorType) for f in typ.fields)


#: How the nodes that are neither calls nor values are named in labels.
_LABELS: dict[type, Callable[[Any], str]] = {
    Var: lambda e: f"%{e.name_hint}",
    GlobalVar: lambda e: f"@{e.name_hint}",
    Op: lambda e: f"`{e.name}",
    Constructor: lambda e: f"`{e.name_hint}",
    Function: lambda e: "fn",
    Let: lambda e: "let",
    If: lambda e: "if",
}


def _call_kind_and_label(call: Call) -> tuple[int, str]:
    if isinstance(call.op, Op):
        kind = default_registry.get_attr(call.op.name, "TOpPattern")
        return (OPAQUE if kind is None else int(kind)), call.op.name
    if isinstance(call.op, Function):
        kind = call.op.attrs.get("TOpPattern")
        return (OPAQUE, "call_fun") if kind is None else (int(kind), "call_prim")
    return OPAQUE, "call_any"


def kind_and_label(expr: Expr) -> tuple[int, str]:
    """How one node fuses (its ``TOpPattern``) and how it is named in labels."""
    if isinstance(expr, Call):
        return _call_kind_and_label(expr)
    if isinstance(expr, Constant):
        return ELEMWISE, "scalar" if expr.data.numpy().ndim == 0 else "const"
    if isinstance(expr, Tuple):
        return (INJECTIVE if _all_tensors(checked_type_or_none(expr)) else OPAQUE), "tuple"
    if isinstance(expr, TupleGetItem):
        inner = checked_type_or_none(expr.tuple_value)
        return (INJECTIVE if _all_tensors(inner) else OPAQUE), "proj"
    name = _LABELS.get(type(expr))
    return OPAQUE, name(expr) if name is not None else type(expr).__name__.lower()


def must_be_lowered(expr: Expr) -> bool:
    """Whether ``expr`` computes something a target must run: a call of an operator
    (other than the bookkeeping ones) or of a ``Primitive`` function."""
    if not isinstance(expr, Call):
        return False
    if isinstance(expr.op, Function):
        return bool(expr.op.attrs.get("Primitive"))
    return isinstance(expr.op, Op) and expr.op.name not in _SPECIAL


class Dataflow:
    """One function's dataflow graph with its sub-graphs, computed once per node set."""

    def __init__(self, func: Function) -> None:
        self.func = func
        self.graph = IndexedGraph(func)
        self._subs: dict[frozenset[int], SubGraph] = {}
        self._down: dict[int, frozenset[int]] = {}

    def __len__(self) -> int:
        return len(self.graph.nodes)

    def sub(self, inside: frozenset[int]) -> SubGraph:
        found = self._subs.get(inside)
        if found is None:
            found = self._subs[inside] = SubGraph(self.graph, inside)
        return found

    def downstream(self, index: int) -> frozenset[int]:
        found = self._down.get(index)
        if found is None:
            found = self._down[index] = frozenset(self.sub(frozenset()).downstream_of(index))
        return found

    def kind_and_label(self, inside: Iterable[int]) -> tuple[int, str]:
        kind, labels = ELEMWISE, []
        for i in sorted(inside):
            k, label = kind_and_label(self.graph.nodes[i])
            kind = max(kind, k)
            if label:
                labels.append(label)
        return kind, "+".join(labels)


@dataclass(eq=False)
class Candidate:
    """A sub-graph a spec could run: the nodes ``inside``, how they fuse (``kind``), their
    ``label`` (the names of their nodes), the nested sub-graphs they are cut into, and
    the cost once estimated (``None`` before)."""

    spec: str
    target: str
    inside: frozenset[int]
    kind: int
    label: str
    nested: tuple[NestedSubGraph, ...] = ()
    rule_name: str = ""
    cost: float | None = None

    @property
    def key(self) -> tuple[Any, ...]:
        """What makes two candidates the same (their sub-graphs, nested ones included)."""
        return self.inside, tuple(nested_key(n) for n in self.nested)

    @property
    def first(self) -> int:
        return min(self.inside)

    def order(self) -> tuple[int, tuple[float, ...], str]:
        """TVM's order of candidates: by first node, then by node set, then rule."""
        return self.first, set_order(self.inside), self.rule_name


def set_order(nodes: Iterable[int]) -> tuple[float, ...]:
    """TVM's order of node sets: at the first node in one set only, that set comes first."""
    return (*sorted(nodes), math.inf)


def nested_key(n: NestedSubGraph) -> tuple[Any, ...]:
    """A hashable identity of a nested sub-graph: nodes, attributes, nested ones."""
    attrs = tuple(sorted((k, str(v)) for k, v in n.attrs.items()))
    return n.inside, attrs, tuple(nested_key(m) for m in n.nested)


def _nested_order(n: NestedSubGraph) -> tuple[int, tuple[float, ...]]:
    return min(n.inside), set_order(n.inside)


def _sorted_nested(items: Iterable[NestedSubGraph]) -> tuple[NestedSubGraph, ...]:
    return tuple(sorted(items, key=_nested_order))


def _trivially_unionable(a: NestedSubGraph, b: NestedSubGraph) -> bool:
    if "Composite" in a.attrs or set(a.attrs) != set(b.attrs):
        return False
    return all(a.attrs[k] == b.attrs[k] for k in a.attrs)


def _union_nested(
    left: Sequence[NestedSubGraph], right: Sequence[NestedSubGraph]
) -> tuple[NestedSubGraph, ...]:
    out = list(left)
    for n in right:
        for k, existing in enumerate(out):
            if _trivially_unionable(existing, n):
                out[k] = NestedSubGraph(
                    existing.inside | n.inside,
                    existing.attrs,
                    _union_nested(existing.nested, n.nested),
                )
                break
        else:
            out.append(n)
    return _sorted_nested(out)


def disjoint_union(a: Candidate, b: Candidate) -> Candidate:
    """The candidate holding both (disjoint) candidates' nodes, their nested sub-graphs
    merged where they carry the same attributes."""
    return Candidate(
        a.spec,
        a.target,
        a.inside | b.inside,
        max(a.kind, b.kind),
        union_labels(a.label, b.label),
        _union_nested(a.nested, b.nested),
        union_labels(a.rule_name, b.rule_name),
        None if a.cost is None or b.cost is None else a.cost + b.cost,
    )


def with_attrs(c: Candidate, attrs: dict[str, Any]) -> Candidate:
    """``c`` cut out as one function carrying ``attrs`` around its nested sub-graphs."""
    nested = (NestedSubGraph(c.inside, dict(attrs), c.nested),)
    return Candidate(c.spec, c.target, c.inside, c.kind, c.label, nested, c.rule_name, c.cost)


def _flows_into(df: Dataflow, left: SubGraph, right: SubGraph) -> bool:
    return any(
        o not in right.inside and df.downstream(o) & right.entry for o in sorted(left.output)
    )


def are_touching(df: Dataflow, a: Candidate, b: Candidate) -> bool:
    """Whether ``a`` feeds ``b`` directly and their union would make no cycle."""
    if a.spec != b.spec or a.inside & b.inside:
        return False
    sa, sb = df.sub(a.inside), df.sub(b.inside)
    if not sa.output & sb.entry:
        return False
    return not (_flows_into(df, sa, sb) or _flows_into(df, sb, sa))


class CandidateSet:
    """Candidates grown round by round: new ones are added after the current ones."""

    def __init__(self, initial: Sequence[Candidate]) -> None:
        self.current: list[Candidate] = []
        self.to_add: list[Candidate] = []
        self.to_remove: list[Candidate] = []
        self.seen: set[Any] = set()
        self.first_new = 0
        for c in initial:
            self.add(c)

    def add(self, c: Candidate) -> None:
        if c.key not in self.seen:
            self.seen.add(c.key)
            self.to_add.append(c)

    def remove(self, c: Candidate) -> None:
        self.to_remove.append(c)

    def next_round(self) -> bool:
        before = len(self.current)
        gone = {c.key for c in self.to_remove}
        self.current = [c for c in self.current if c.key not in gone]
        removed = before - len(self.current)
        self.to_remove = []
        self.first_new = len(self.current)
        self.current += self.to_add
        added = len(self.to_add)
        self.to_add = []
        return removed + added > 0


# -- combiner rules -------------------------------------------------------------------------------

KindRule = tuple[int, int]  # (most upstream kind, most downstream kind)
FUSE_OPS_RULES: tuple[KindRule, ...] = (
    (FUSABLE, BROADCAST),
    (BROADCAST, COMM_REDUCE),
    (INJECTIVE, INJECTIVE),
)
ANY_FUSION_RULES: tuple[KindRule, ...] = ((FUSABLE, FUSABLE),)

#: How an external codegen's candidates may be unioned (``relay.collage.byoc_fusion_style``
#: entries ``"<compiler>.<style>"``): not at all, by ``FuseOps``' rules, or any touching ones.
FUSION_STYLES: dict[str, tuple[KindRule, ...]] = {
    "NoFusion": (),
    "TVMFusion": FUSE_OPS_RULES,
    "ArbitraryFusion": ANY_FUSION_RULES,
}
#: The style of codegens that fuse nothing themselves (or only as ``FuseOps`` does).
DEFAULT_FUSION_STYLES = {
    "cutlass": "NoFusion", "cublas": "NoFusion", "cudnn": "NoFusion", "tensorrt": "TVMFusion",
}  # fmt: skip


def _combine_simple(df: Dataflow, cs: CandidateSet, rules: Sequence[KindRule], depth: int) -> None:
    entry_map: dict[int, list[int]] = {}
    for i, c in enumerate(cs.current):
        for e in df.sub(c.inside).entry:
            entry_map.setdefault(e, []).append(i)
    for i, up in enumerate(cs.current):
        if i < cs.first_new:  # pairs of older candidates were tried in earlier rounds
            continue
        downs = sorted({j for o in df.sub(up.inside).output for j in entry_map.get(o, ())})
        for j in downs:
            if i == j:
                continue
            down = cs.current[j]
            if depth > 0 and df.sub(up.inside).depth() + df.sub(down.inside).depth() > depth:
                continue
            if not are_touching(df, up, down):
                continue
            for up_kind, down_kind in rules:
                if up.kind <= up_kind and down.kind <= down_kind:
                    cs.add(disjoint_union(up, down))


def _combine_tuple_args(df: Dataflow, cs: CandidateSet) -> None:
    nodes = df.graph.nodes
    exit_map: dict[int, list[int]] = {}
    for i, c in enumerate(cs.current):
        if c.kind <= INJECTIVE:
            for e in df.sub(c.inside).exit:
                exit_map.setdefault(e, []).append(i)
    for i, consumer in enumerate(cs.current):
        if consumer.kind > INJECTIVE or i < cs.first_new:
            continue
        for t in sorted(df.sub(consumer.inside).input):
            if not isinstance(nodes[t], Tuple):
                continue
            tup = Candidate(consumer.spec, consumer.target, frozenset({t}), INJECTIVE, "tuple")
            unions: list[list[Candidate]] = [[consumer, tup]]
            for f in dict.fromkeys(df.graph.inputs[t]):
                producers = [cs.current[j] for j in exit_map.get(f, ()) if j != i]
                if not producers:
                    unions = []
                    break
                unions = [[*u, p] for p in producers for u in unions]
            for u in unions:
                if len(u) <= 2:
                    continue
                merged = u[0]
                for other in u[1:]:
                    if merged.inside & other.inside:
                        break
                    merged = disjoint_union(merged, other)
                else:
                    cs.add(merged)


def _combine_projections(df: Dataflow, cs: CandidateSet) -> None:
    nodes = df.graph.nodes
    for base in cs.current[cs.first_new :]:
        for o in sorted(df.sub(base.inside).output):
            if isinstance(nodes[o], TupleGetItem):
                proj = Candidate(base.spec, base.target, frozenset({o}), INJECTIVE, "proj")
                cs.add(disjoint_union(base, proj))


def _combine(
    df: Dataflow,
    candidates: Sequence[Candidate],
    rules: Sequence[KindRule],
    depth: int,
    tuples: bool,
) -> list[Candidate]:
    cs = CandidateSet(candidates)
    while cs.next_round():
        if rules:
            _combine_simple(df, cs, rules, depth)
        if tuples:
            _combine_tuple_args(df, cs)
            _combine_projections(df, cs)
    return cs.current


def _only_valid(df: Dataflow, candidates: Iterable[Candidate], depth: int) -> list[Candidate]:
    config = SubGraphConfig(max_exits=1, allow_taps=False, max_depth=depth)
    return [c for c in candidates if not df.sub(c.inside).invalid_reason(config)]


# -- the rules of each kind of spec ---------------------------------------------------------------


def host_candidates(df: Dataflow, spec: str, target: str) -> list[Candidate]:
    """Every node that need not be lowered, alone, at no cost."""
    out = []
    for i, node in enumerate(df.graph.nodes):
        if not must_be_lowered(node):
            kind, label = df.kind_and_label((i,))
            out.append(Candidate(spec, target, frozenset({i}), kind, label, (), label, 0.0))
    return out


def compiler_candidates(df: Dataflow, spec: str, target: str, max_depth: int) -> list[Candidate]:
    """Operator calls and their unions by ``FuseOps``' rules (a compiler target)."""
    singles = []
    for i, node in enumerate(df.graph.nodes):
        if isinstance(node, Call) and must_be_lowered(node):
            kind, label = df.kind_and_label((i,))
            singles.append(Candidate(spec, target, frozenset({i}), kind, label, (), label))
    combined = _combine(df, singles, FUSE_OPS_RULES, max_depth, tuples=True)
    return _only_valid(df, combined, max_depth)


PatternEntry = tuple[str, DFPattern, Callable[[Expr], bool] | None]


def _pattern_candidates(
    df: Dataflow, spec: str, target: str, name: str, pattern: DFPattern, check: Any
) -> list[Candidate]:
    out = []
    matcher = DFPatternMatcher(df.func, df.graph)
    for node in df.graph.nodes:
        if not matcher.match(pattern, node):
            continue
        if check is not None and not check(node):
            continue
        inside = frozenset(
            df.graph.index[e]
            for p, matched in matcher.memo.items()
            if not isinstance(p, WildcardPattern)
            for e in matched
            if not can_inline(e) and e in df.graph.index
        )
        if not inside:
            continue
        kind, label = df.kind_and_label(inside)
        composite = (NestedSubGraph(inside, {"Composite": name}, ()),)
        out.append(
            Candidate(spec, target, inside, kind, label, composite, _nest_labels(name, label))
        )
    return out


def external_candidates(
    df: Dataflow,
    spec: str,
    target: str,
    table: Sequence[tuple[Any, ...]] | None,
    accepts: Callable[[Call], bool] | None,
    max_depth: int,
    fusion: Sequence[KindRule] = ANY_FUSION_RULES,
) -> list[Candidate]:
    """Pattern matches (or, without a table, the calls ``accepts``) of an external codegen,
    unioned while touching, each cut out as a ``Primitive`` ``Compiler=spec`` function."""
    singles: list[Candidate] = []
    for entry in table or ():
        name, pattern = str(entry[0]), entry[1]
        check = entry[2] if len(entry) > 2 else None
        singles += _pattern_candidates(df, spec, target, name, pattern, check)
    if table is None and accepts is not None:
        for i, node in enumerate(df.graph.nodes):
            if isinstance(node, Call) and must_be_lowered(node) and accepts(node):
                kind, label = df.kind_and_label((i,))
                singles.append(Candidate(spec, target, frozenset({i}), kind, label, (), label))
    combined = _combine(df, singles, fusion, max_depth, tuples=False) if fusion else singles
    valid = _only_valid(df, combined, max_depth)
    return [with_attrs(c, {"Primitive": 1, "Compiler": spec}) for c in valid]


# -- pruning --------------------------------------------------------------------------------------


def _maximal(candidates: Sequence[Candidate]) -> list[Candidate]:
    by_node: dict[int, list[int]] = {}
    for k, c in enumerate(candidates):
        for i in c.inside:
            by_node.setdefault(i, []).append(k)
    out = []
    for k, c in enumerate(candidates):
        others = {j for i in c.inside for j in by_node[i] if j != k}
        if not any(
            candidates[j].spec == c.spec and c.inside <= candidates[j].inside for j in others
        ):
            out.append(c)
    return out


def _intersecting(candidates: Sequence[Candidate]) -> set[Any]:
    by_node: dict[int, list[int]] = {}
    for k, c in enumerate(candidates):
        for i in c.inside:
            by_node.setdefault(i, []).append(k)
    hit: set[Any] = set()
    for k, c in enumerate(candidates):
        for j in {j for i in c.inside for j in by_node[i] if j > k}:
            if candidates[j].inside != c.inside:
                hit.add(c.key)
                hit.add(candidates[j].key)
    return hit


def prune_candidates(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The candidates worth searching: every candidate with no larger one of its spec
    around it, and, where two such overlap, what each had hidden, round after round;
    in TVM's order (first node, node set, rule)."""
    pool = list(candidates)
    kept: dict[Any, Candidate] = {}
    while True:
        new = [c for c in _maximal(pool) if c.key not in kept]
        if not new:
            break
        for c in new:
            kept[c.key] = c
        gone = _intersecting(list(kept.values()))
        pool = [c for c in pool if c.key not in gone]
    return sorted(kept.values(), key=Candidate.order)
