"""``MergeCompilerRegions``: grow regions without ever creating a cycle.

The regions ``AnnotateTarget`` made (one per operator) become the nodes of a
dataflow graph together with the host nodes between them (``If``, ``Let`` and
its variable, function literals, unannotated tuples). Walking that graph in
topological order, a region is merged with each producer region of the same
target unless some path leaves the producer and re-enters the consumer through
another node — merging then would create a cycle, i.e. a region that waits for
its own output. Paths through ``If`` and ``Let`` count like any other.

Regions are merged only within one scope: nodes inside an ``If`` branch, a
``Let`` body or a function literal never join regions outside it. ``default``
(host) regions are merged like the others, as TVM's pass does (``PartitionGraph``
returns them to the host); a merged host region constrains later merges exactly as a
target's does.

The cycle checks (:mod:`relaykit.byoc.groups`) are bidirectional searches
that stop as soon as either side runs out, with results on host chains cached:
a chain, a residual or DenseNet block, or a region between two host chains
costs O(1) per merge, and a shared budget keeps the pass linear on any input
(TVM's pass copied restriction sets and hung on DenseNet-121).

>>> from relaykit import relay
>>> import relaykit as tvm
>>> from relaykit.byoc import AnnotateTarget
>>> x = relay.var("x", shape=(2,))
>>> mod = tvm.IRModule.from_expr(relay.nn.relu(relay.abs(x)))
>>> with tvm.ir.default_registry.scoped():
...     for name in ("nn.relu", "abs"):
...         tvm.ir.register_op_attr(name, "target.lib", True)
...     mod = MergeCompilerRegions()(AnnotateTarget("lib")(mod))
>>> from relaykit.byoc.regions import find_regions
>>> len(find_regions(mod["main"].body))
1
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.expr import Call, Constant, Expr, Function, GlobalVar, If, Let
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.transform.pass_infra import Pass, PassContext, PassInfo

from ._common import (
    DEFAULT_TARGET,
    PartitionError,
    annotation_ops,
    copy_type,
    data_children,
    ensure_typed,
    no_gc,
    rebuild_with,
)
from .groups import ContractedGraph
from .regions import RegionSet, find_regions, walk

__all__ = ["MergeCompilerRegions", "merge_regions", "merged_groups"]

_MULTI = -1


def _scopes(order: list[Expr]) -> dict[Expr, int]:
    """The control scope of every node: a new scope per ``If`` branch, ``Let``
    body and function body; ``_MULTI`` for a node used from several scopes."""
    scope: dict[Expr, int] = {}
    if not order:
        return scope
    scope[order[-1]] = 0
    fresh = 1
    node: Any
    for node in reversed(order):
        s = scope.get(node, 0)
        t = type(node)
        kids = data_children(node)
        for i, kid in enumerate(kids):
            cs = s
            if s != _MULTI and (
                (t is If and i > 0) or (t is Let and i == 2) or (t is Function and kid is node.body)
            ):
                cs = fresh
                fresh += 1
            old = scope.get(kid)
            if old is None:
                scope[kid] = cs
            elif old != cs:
                scope[kid] = _MULTI
    return scope


class _UnitGraph:
    """The dataflow graph of one function body whose nodes ("units") are the regions
    (by root) and the host nodes between them, and its greedy contraction."""

    def __init__(self, body: Expr, order: list[Expr]) -> None:
        self.order = order
        self.rs = find_regions(body, order)
        self.root = self.rs.root_table()
        self.n_raw = len(self.root)
        self.host_unit: dict[Expr, int] = {}
        self.src: list[int] = []
        self.dst: list[int] = []
        self.control_flow = False

    def unit(self, e: Expr) -> int | None:
        """The unit of ``e``: its region's root, its host unit, or None (not a unit)."""
        r = self.rs.region_of.get(e)
        return self.root[r] if r is not None else self.host_unit.get(e)

    def collect_edges(self) -> None:
        """Establishes ``src``/``dst`` (one edge per data dependency between units) and
        a host unit for every host node that is not a leaf."""
        begin_op, end_op = annotation_ops()
        region_of = self.rs.region_of
        root = self.root
        rget = region_of.get
        host_unit = self.host_unit
        hget = host_unit.get
        n_raw = self.n_raw
        src, dst = self.src, self.dst
        node: Any
        for node in self.order:
            t = type(node)
            if t is Call:
                op = node.op
                if op is begin_op:
                    arg = node.args[0]
                    r = rget(arg)
                    u = root[r] if r is not None else hget(arg)
                    if u is not None:
                        src.append(u)
                        dst.append(root[region_of[node]])
                    continue
                if op is end_op:
                    continue
            r = rget(node)
            if r is not None:
                # Inside a region: only a closed region used directly (no begin) is an edge.
                for kid in node.args if t is Call else data_children(node):
                    if type(kid) is Call and kid.op is end_op:
                        src.append(root[region_of[kid]])
                        dst.append(root[r])
                continue
            if t is Constant or t is Op or t is GlobalVar:
                continue
            if t is If or t is Let or t is Function:
                self.control_flow = True
            u = host_unit[node] = n_raw + len(host_unit)
            for kid in data_children(node):
                r = rget(kid)
                uk = root[r] if r is not None else hget(kid)
                if uk is not None:
                    src.append(uk)
                    dst.append(u)
            if t is Let:
                uv = self.unit(node.value)
                if uv is not None:
                    src.append(uv)
                    dst.append(host_unit[node.var])

    def build_adjacency(self) -> None:
        """Establishes ``out``/``inn`` (edge lists without self-loops), the ``units``
        (region roots, then host units) and the target of every region unit."""
        n = self.n = self.n_raw + len(self.host_unit)
        out: list[list[int]] = [[] for _ in range(n)]
        inn: list[list[int]] = [[] for _ in range(n)]
        for a, b in zip(self.src, self.dst, strict=True):
            if a != b:
                out[a].append(b)
                inn[b].append(a)
        self.out, self.inn = out, inn
        root = self.root
        self.region_units = [r for r in range(self.n_raw) if root[r] == r]
        self.units = [*self.region_units, *range(self.n_raw, n)]
        self.unit_target: list[str | None] = [None] * n
        for r in self.region_units:
            self.unit_target[r] = self.rs.target(r)

    def topological_order(self) -> None:
        """Establishes ``topo`` (Kahn's order of the units) and each unit's ``rank`` in
        it; a cycle means the annotations are inconsistent."""
        out = self.out
        indeg = [len(x) for x in self.inn]
        ready = [u for u in self.units if indeg[u] == 0]
        topo: list[int] = []
        while ready:
            u = ready.pop()
            topo.append(u)
            for w in out[u]:
                indeg[w] -= 1
                if indeg[w] == 0:
                    ready.append(w)
        if len(topo) != len(self.units):
            raise PartitionError(
                "the compiler regions form a cycle (a region depends on its own output); the "
                "compiler_begin/compiler_end annotations are inconsistent"
            )
        self.topo = topo
        self.rank = [0] * self.n
        for i, u in enumerate(topo):
            self.rank[u] = i

    def unit_scopes(self) -> list[int]:
        """The control scope of every unit (``_MULTI`` when its nodes lie in several)."""
        unit_scope = [0] * self.n
        if not self.control_flow:
            return unit_scope
        scope = _scopes(self.order)
        seen_unit = [False] * self.n
        unit = self.unit
        for node in self.order:
            u = unit(node)
            if u is None:
                continue
            sc = scope.get(node, 0)
            if not seen_unit[u]:
                seen_unit[u] = True
                unit_scope[u] = sc
            elif unit_scope[u] != sc:
                unit_scope[u] = _MULTI
        return unit_scope

    def contract(self, stats: dict[str, int] | None) -> ContractedGraph:
        """Merges, in topological order, each unit with every producer of the same
        target and scope unless that would create a cycle; returns the groups."""
        unit_target, inn = self.unit_target, self.inn
        unit_scope = self.unit_scopes()
        never_merged = [t is None for t in unit_target]
        groups = ContractedGraph(self.out, inn, self.rank, never_merged)
        find = groups.find
        checks = merges = 0
        for u in self.topo:
            tgt = unit_target[u]
            if never_merged[u] or unit_scope[u] == _MULTI:
                continue
            tried: set[int] = set()
            for p in inn[u]:
                if p in tried or unit_target[p] != tgt or unit_scope[p] != unit_scope[u]:
                    continue
                tried.add(p)
                gp, gu = find(p), find(u)
                if gp == gu:
                    continue
                checks += 1
                if groups.has_path(gp, gu):
                    continue
                if groups.members[gu] is not None and groups.has_path(gu, gp):
                    continue
                groups.union(gp, gu, u)
                merges += tgt != DEFAULT_TARGET
        if stats is not None:
            stats.update(
                units=len(self.units),
                edges=len(self.src),
                checks=checks,
                merges=merges,
                search_steps=groups.initial_budget - groups.budget,
                refused=groups.refused,
            )
        return groups

    def representatives(self, groups: ContractedGraph) -> dict[int, int]:
        """Each region's group, named by the region of the group with the smallest label."""
        find, label = groups.find, self.rs.label
        best: dict[int, int] = {}
        for r in self.region_units:
            g = find(r)
            cur = best.get(g)
            if cur is None or label(r) < label(cur):
                best[g] = r
        return {r: best[find(r)] for r in self.region_units}


def merged_groups(
    body: Expr, order: list[Expr] | None = None, stats: dict[str, int] | None = None
) -> tuple[RegionSet, dict[int, int]]:
    """The regions of ``body`` and, for each region, the representative region of the
    merged group it ends up in. ``stats``, when given, receives counts of the work
    done: ``units``, ``edges``, ``checks``, ``merges`` (of target regions; host regions'
    merges are not counted), ``search_steps``, ``refused``."""
    graph = _UnitGraph(body, walk(body) if order is None else order)
    graph.collect_edges()
    graph.build_adjacency()
    graph.topological_order()
    groups = graph.contract(stats)
    return graph.rs, graph.representatives(groups)


def merge_regions(func: Function) -> Function:
    """``func`` with neighbouring regions of the same target merged (see module doc)."""
    body = func.body
    order = walk(body)
    rs, group = merged_groups(body, order)
    begin_op, end_op = annotation_ops()
    region_of = rs.region_of
    group_of = [group.get(r, r) for r in rs.root_table()]
    memo: dict[Expr, Expr] = {}
    get = memo.get
    changed = False
    for node in order:
        if type(node) is Call and node.op is begin_op:
            arg = node.args[0]
            if (
                type(arg) is Call
                and arg.op is end_op
                and group_of[region_of[node]] == group_of[region_of[arg]]
            ):
                # A boundary between two regions of one group disappears.
                inner = arg.args[0]
                memo[node] = get(inner, inner)
                changed = True
                continue
        if changed:
            new = rebuild_with(node, memo)
            if new is not node:
                memo[node] = new
    if not changed:
        return func
    return copy_type(func.with_fields(body=get(body, body)), func)  # type: ignore[return-value]


class MergeCompilerRegions(Pass):
    """``relay.transform.MergeCompilerRegions()``."""

    def __init__(self) -> None:
        self.info = PassInfo(0, "MergeCompilerRegions")

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod.copy()
        for gv, fn in mod.items():
            if "Compiler" in fn.attrs or "Composite" in fn.attrs:
                continue
            fn = ensure_typed(fn, mod)
            with no_gc():
                new = merge_regions(fn)
            if new is not fn:
                out.update_func(gv, new)
        return out
