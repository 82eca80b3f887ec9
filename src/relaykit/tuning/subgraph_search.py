"""Collage's search over candidate sub-graphs (TVM's ``CollagePartition`` with a cost
estimator such as ``relay.collage.MockCostEstimator``).

For each function (``main`` and every other function not already compiled apart):

1. gather the candidates of every spec (:mod:`.subgraph_rules`): one per target of the
   compilation config (a compiler kind like ``llvm``: ``FuseOps``-style fusions; an
   external codegen: its patterns), plus the host's; prune them;
2. estimate each candidate's cost: it is cut out as a function (a ``Primitive``
   ``Compiler`` function for an external codegen, named ``collage_<spec>_<label>``) and
   the estimator's ``estimate(mod, target)`` answers; structurally equal functions are
   estimated once and share their name;
3. search, least total cost first (Dijkstra), for the set of disjoint candidates that
   covers every node, always extending by a candidate that starts at the first node
   not yet covered; ties go to the state whose covered nodes come first;
4. merge touching chosen candidates of one spec (their functions become one, named
   ``collage_<spec>`` unless estimated under a name already) and cut them out.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from relaykit.byoc.sub_graph import NestedSubGraph, extract_function, rewrite_sub_graphs
from relaykit.errors import PlacementError
from relaykit.ir.expr import Call, Expr, Function, GlobalVar
from relaykit.ir.functor import post_order, rebuild
from relaykit.ir.module import IRModule
from relaykit.ir.structural import structural_equal, structural_hash
from relaykit.transform.infer_type import InferType

from .subgraph_rules import (
    ANY_FUSION_RULES,
    Candidate,
    CandidateSet,
    Dataflow,
    are_touching,
    compiler_candidates,
    disjoint_union,
    external_candidates,
    host_candidates,
    prune_candidates,
    set_order,
)

__all__ = ["Spec", "Estimator", "NameCache", "collage_partition", "search", "HOST_SPEC"]

#: The spec of what stays with the host (at no cost).
HOST_SPEC = "host"


class Estimator(Protocol):
    """A cost estimator: seconds (or any cost) of ``mod``'s ``main`` on ``target``."""

    def estimate(self, mod: IRModule, target: str) -> float: ...


class Spec:
    """One target's way of proposing candidates: a compiler target (``external=False``,
    named ``tvm_<kind>``), an external codegen with a pattern table (or, without one,
    an ``accepts(call)`` rule per operator call), or the host."""

    def __init__(
        self,
        target: str,
        external: bool,
        table: Sequence[tuple[Any, ...]] | None = None,
        accepts: Callable[[Call], bool] | None = None,
        host: bool = False,
        fusion: Sequence[tuple[int, int]] = ANY_FUSION_RULES,
    ) -> None:
        self.target = target
        self.external = external
        self.table = table
        self.accepts = accepts
        self.host = host
        self.fusion = tuple(fusion)
        self.name = HOST_SPEC if host else target if external else f"tvm_{target}"

    def candidates(self, df: Dataflow, tvm_depth: int, byoc_depth: int) -> list[Candidate]:
        if self.host:
            return host_candidates(df, self.name, self.target)
        if self.external:
            return external_candidates(
                df, self.name, self.target, self.table, self.accepts, byoc_depth, self.fusion
            )
        return compiler_candidates(df, self.name, self.target, tvm_depth)


def _c_safe(text: str) -> str:
    out = "".join(c if c == "_" or c.isalnum() else "_" for c in text)
    return out if not out or out[0].isalpha() or out[0] == "_" else f"_{out}"


class NameCache:
    """Names and costs of the functions cut out, shared by structurally equal ones:
    ``collage_<compiler>_<label>``, with ``_1``, ``_2``... when a name repeats."""

    def __init__(self, prefix: str = "collage") -> None:
        self.prefix = prefix
        self._next: dict[str, int] = {}
        self._entries: dict[int, list[tuple[Function, str, list[float]]]] = {}

    def fresh(self, *hints: str) -> str:
        name = "_".join(_c_safe(h) for h in (self.prefix, *hints) if h)
        count = self._next.get(name)
        if count is None:
            self._next[name] = 1
            return name
        self._next[name] = count + 1
        return f"{name}_{count}"

    def entry(self, label: str, func: Function) -> tuple[str, list[float]]:
        """The name and (one-element, NaN until estimated) cost cell of ``func``."""
        bucket = self._entries.setdefault(structural_hash(func), [])
        for other, name, cost in bucket:
            if structural_equal(other, func):
                return name, cost
        compiler = str(func.attrs.get("Compiler", "tvm"))
        name = self.fresh(compiler, label)
        cell = [math.nan]
        bucket.append((func, name, cell))
        return name, cell


def _primitive(func: Function) -> Function:
    body = func.body
    if isinstance(body, Call) and isinstance(body.op, Function) and body.op.attrs.get("Primitive"):
        return body.op
    return func


def _outline(func: Function, cache: NameCache, mod: IRModule) -> Function:
    """``func`` with each inline ``Compiler`` function made a global of ``mod``, named by
    ``cache`` (and carrying the name as its ``global_symbol``)."""
    memo: dict[Expr, Expr] = {}
    for node in post_order(func):
        new = rebuild(node, memo.__getitem__)
        if isinstance(new, Call) and isinstance(new.op, Function) and "Compiler" in new.op.attrs:
            fn = new.op
            name, _ = cache.entry("", fn)
            if not mod.contains_global_var(name):
                mod.update_func(GlobalVar(name), fn.with_attr("global_symbol", name))
            new = new.with_fields(op=mod.get_global_var(name))
        memo[node] = new
    out = memo[func]
    assert isinstance(out, Function)
    return out


def estimate(df: Dataflow, candidate: Candidate, estimator: Estimator, cache: NameCache) -> float:
    """The cost of ``candidate`` (estimated once per distinct function)."""
    if candidate.cost is not None:
        return candidate.cost
    func = extract_function(df.graph, NestedSubGraph(candidate.inside, {}, candidate.nested))
    _, cell = cache.entry(candidate.label, _primitive(func))
    if math.isnan(cell[0]):
        mod = IRModule()
        mod.update_func(GlobalVar("main"), _outline(func, cache, mod))
        cell[0] = float(estimator.estimate(mod, candidate.target))
    candidate.cost = cell[0]
    return cell[0]


def search(
    df: Dataflow, candidates: Sequence[Candidate], estimator: Estimator, cache: NameCache
) -> list[Candidate]:
    """The disjoint candidates covering every node of ``df`` at least total cost."""
    n = len(df)
    starting: list[list[Candidate]] = [[] for _ in range(n)]
    for c in candidates:
        starting[c.first].append(c)
    for group in starting:  # estimated eagerly, in TVM's order
        for c in group:
            estimate(df, c, estimator, cache)
    start: frozenset[int] = frozenset()
    best: dict[frozenset[int], tuple[float, frozenset[int] | None, Candidate | None]] = {
        start: (0.0, None, None)
    }
    heap: list[tuple[float, tuple[float, ...], frozenset[int]]] = [(0.0, set_order(start), start)]
    done: set[frozenset[int]] = set()
    stuck: int | None = None  # the first node some partial cover could not go on from
    while heap:
        cost, _, covered = heapq.heappop(heap)
        if covered in done or cost != best[covered][0]:
            continue
        done.add(covered)
        nxt = next((i for i in range(n) if i not in covered), n)
        if nxt == n:
            chosen = []
            while best[covered][2] is not None:
                _, prev, cand = best[covered]
                assert cand is not None and prev is not None
                chosen.append(cand)
                covered = prev
            return chosen
        fired = False
        for cand in starting[nxt]:
            if cand.inside & covered:
                continue
            fired = True
            after = covered | cand.inside
            total = cost + estimate(df, cand, estimator, cache)
            if after not in best or total < best[after][0]:
                best[after] = (total, covered, cand)
                heapq.heappush(heap, (total, set_order(after), after))
        if not fired and stuck is None:
            stuck = nxt  # a dead end of this cover only: another may still go round it
    where = "" if stuck is None else f" node {stuck} ({type(df.graph.nodes[stuck]).__name__})"
    raise PlacementError(
        f"no cover of the function by the candidates reaches past{where}: add a target "
        "whose rules or patterns cover that node on its own"
    )


def coalesce(df: Dataflow, chosen: Sequence[Candidate]) -> list[Candidate]:
    """``chosen`` with touching candidates of one spec merged, round after round."""
    cs = CandidateSet(chosen)
    while cs.next_round():
        removed: set[int] = set()
        entry_map: dict[int, list[int]] = {}
        for i, c in enumerate(cs.current):
            for e in df.sub(c.inside).entry:
                entry_map.setdefault(e, []).append(i)
        for i, up in enumerate(cs.current):
            if i in removed:
                continue
            downs = sorted({j for o in df.sub(up.inside).output for j in entry_map.get(o, ())})
            for j in downs:
                if j in removed or i == j:
                    continue
                down = cs.current[j]
                if not are_touching(df, up, down):
                    continue
                cs.add(disjoint_union(up, down))
                cs.remove(up)
                cs.remove(down)
                removed |= {i, j}
                break
    return sorted(cs.current, key=Candidate.order)


def partition_function(
    func: Function,
    specs: Sequence[Spec],
    estimator: Estimator,
    cache: NameCache,
    tvm_depth: int,
    byoc_depth: int,
) -> Function:
    """``func`` with the least-cost candidates of its nodes cut out."""
    df = Dataflow(func)
    everything: list[Candidate] = []
    for spec in specs:
        everything += spec.candidates(df, tvm_depth, byoc_depth)
    chosen = coalesce(df, search(df, prune_candidates(everything), estimator, cache))
    cut = [NestedSubGraph(c.inside, n.attrs, n.nested) for c in chosen for n in c.nested]
    out = rewrite_sub_graphs(df.graph, cut) if cut else func
    assert isinstance(out, Function)
    return out


def _optimizable(fn: Function) -> bool:
    return not any(k in fn.attrs for k in ("Compiler", "Primitive", "Extern"))


def collage_partition(
    mod: IRModule,
    specs: Sequence[Spec],
    estimator: Estimator,
    tvm_depth: int = 3,
    byoc_depth: int = 3,
) -> IRModule:
    """``mod`` partitioned by Collage's search (see the module), typed."""
    cache = NameCache()
    typed = InferType()(mod)
    out = typed.copy()
    functions: Mapping[GlobalVar, Function] = dict(typed.items())
    for gv, fn in functions.items():
        if _optimizable(fn):
            out.update_func(
                gv, partition_function(fn, specs, estimator, cache, tvm_depth, byoc_depth)
            )
    for gv, fn in list(out.items()):
        if _optimizable(fn):
            out.update_func(gv, _outline(fn, cache, out))
    return InferType()(out)
