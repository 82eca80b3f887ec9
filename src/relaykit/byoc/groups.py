"""Contracting a DAG without creating cycles (the engine of ``MergeCompilerRegions``).

Two groups may be contracted into one only when no path leads from one to the
other through a third node: such a path would become a cycle. ``has_path``
answers with a bidirectional search that stops as soon as either side runs
out: the forward side skips groups that start after the target, the backward
side takes two steps per forward step and remembers, on host nodes (which
never join a group), that their ancestors hold no member of a group, so long
host chains beside a growing group are walked once. All checks together share
a search budget linear in the graph; past it, a check that does not settle
within a few steps answers True (keep the groups apart), so the whole is
linear on any input and never wrong about cycles, only, in that case, less
merged. This is the idea of XLA's ``GraphCycles`` (Pearce-Kelly), specialised
to merging in topological order.

>>> g = ContractedGraph(out=[[1, 2], [2], []], inn=[[], [0], [0, 1]], rank=[0, 1, 2],
...                     host=[False, True, False])
>>> g.has_path(0, 2)        # 0 -> 1 -> 2: contracting 0 and 2 would make a cycle
True
>>> g.has_path(0, 1)        # only the direct edge
False
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["ContractedGraph"]


class ContractedGraph:
    """A DAG whose nodes can be contracted into groups, with cycle checks.

    Nodes are numbered ``0..n-1`` with edges ``out``/``inn`` and a topological
    ``rank``; ``host[u]`` marks nodes that never join a group. Groups are a
    union-find; each keeps its external in/out edges (merged small-into-large)
    and the span of its members' ranks.
    """

    def __init__(
        self, out: list[list[int]], inn: list[list[int]], rank: list[int], host: list[bool]
    ) -> None:
        n = len(out)
        self.host = host
        # A group's identity for cached search results: kept when the group absorbs the
        # unit being visited (which cannot be an ancestor of anything seen before),
        # renewed when two older groups merge.
        self.gid = list(range(n))
        self.next_gid = n
        # Host unit -> gid of a group its ancestors are known not to contain.
        self.clear_of: dict[int, int] = {}
        self.out, self.inn = out, inn
        self.parent = list(range(n))
        self.members: list[list[int] | None] = [None] * n
        self.ext_out: list[set[int] | None] = [None] * n
        self.ext_in: list[set[int] | None] = [None] * n
        self.minr = list(rank)
        self.maxr = list(rank)
        # Search steps left for all cycle checks together: linear in the graph. Past it,
        # a check that does not settle within a few steps refuses its merge.
        self.budget = self.initial_budget = _BUDGET_PER_UNIT * n + _BUDGET_BASE
        self.refused = 0

    def find(self, u: int) -> int:
        parent = self.parent
        root = u
        while parent[root] != root:
            root = parent[root]
        while parent[u] != root:
            parent[u], u = root, parent[u]
        return root

    def _outs(self, g: int) -> Any:
        s = self.ext_out[g]
        return self.out[g] if s is None else s

    def _ins(self, g: int) -> Any:
        s = self.ext_in[g]
        return self.inn[g] if s is None else s

    def _weight(self, g: int) -> int:
        m = self.members[g]
        return (1 if m is None else len(m)) + len(self._outs(g)) + len(self._ins(g))

    def union(self, a: int, b: int, fresh: int) -> int:
        """Merge groups ``a`` and ``b``; ``fresh`` is the unit being visited."""
        if self.members[b] is None and b == fresh:
            gid = self.gid[a]
        elif self.members[a] is None and a == fresh:
            gid = self.gid[b]
        else:
            gid = self.next_gid
            self.next_gid += 1
        if self._weight(a) < self._weight(b):
            a, b = b, a
        self.gid[a] = gid
        find = self.find
        self.parent[b] = a
        mem_a = self.members[a]
        if mem_a is None:
            mem_a = self.members[a] = [a]
        mem_b = self.members[b] or [b]
        outs_a = self.ext_out[a]
        if outs_a is None:
            outs_a = self.ext_out[a] = set(self.out[a])
        ins_a = self.ext_in[a]
        if ins_a is None:
            ins_a = self.ext_in[a] = set(self.inn[a])
        for m in mem_b:
            outs_a.discard(m)
            ins_a.discard(m)
        for w in self._outs(b):
            if find(w) != a:
                outs_a.add(w)
        for v in self._ins(b):
            if find(v) != a:
                ins_a.add(v)
        mem_a.extend(mem_b)
        self.members[b] = self.ext_out[b] = self.ext_in[b] = None
        self.minr[a] = min(self.minr[a], self.minr[b])
        self.maxr[a] = max(self.maxr[a], self.maxr[b])
        return a

    def has_path(self, a: int, b: int) -> bool:
        """Whether a path leads from group ``a`` to group ``b`` through another node.

        When the shared search budget is spent and this search needs more than
        ``_LATE_STEPS`` steps, the answer is a conservative True (no merge)."""
        budget = self.budget
        local = budget if budget > 0 else _LATE_STEPS
        steps = 0
        try:
            return self._search(a, b, local)
        except _OutOfBudget:
            steps = local
            self.refused += 1
            return True
        finally:
            self.budget = budget - (steps or self._steps)

    _steps = 0

    def _search(self, a: int, b: int, local: int) -> bool:
        """Bidirectional search from ``a``'s successors and ``b``'s predecessors; stops
        when they meet (a path) or either side runs out (none). The forward side skips
        groups that start after ``b``; the backward side takes two steps per forward
        step, and its negative results are cached on host units."""
        find = self.find
        fstack: list[tuple[Iterator[int], bool]] = [(iter(self._outs(a)), True)]
        bstack: list[tuple[Iterator[int], bool]] = [(iter(self._ins(b)), True)]
        fseen = {a}
        bseen = {b}
        gid_a = self.gid[a]
        limit = self.maxr[b]
        minr = self.minr
        steps = 0
        while True:
            steps += 1
            self._steps = steps
            if steps > local:
                raise _OutOfBudget()
            item = _pull(fstack)
            if item is None:
                return False
            w, seed = item
            g = find(w)
            if g == b:
                if not seed:
                    return True
            elif g != a and g not in fseen:
                if g in bseen:
                    return True
                if minr[g] <= limit:
                    fseen.add(g)
                    fstack.append((iter(self._outs(g)), False))
            for _ in range(2):
                found = self._backward_step(bstack, fseen, bseen, a, b, gid_a)
                if found is not None:
                    return found

    def _backward_step(
        self,
        bstack: list[tuple[Iterator[int], bool]],
        fseen: set[int],
        bseen: set[int],
        a: int,
        b: int,
        gid_a: int,
    ) -> bool | None:
        """One step of the backward search: True (a path), False (no path: every
        ancestor was seen) or None (not settled yet)."""
        item = _pull(bstack)
        if item is None:
            # No ancestor is in ``a``: remember it for the host units among them (they
            # never join a group, so their ancestors stay as they are).
            clear_of, host = self.clear_of, self.host
            for g in bseen:
                if host[g]:
                    clear_of[g] = gid_a
            return False
        v, seed = item
        g = self.find(v)
        if g == a:
            return None if seed else True
        if g != b and g not in bseen:
            if g in fseen:
                return True
            bseen.add(g)
            if self.clear_of.get(g) != gid_a:
                bstack.append((iter(self._ins(g)), False))
        return None


_BUDGET_PER_UNIT = 256
_BUDGET_BASE = 100_000
_LATE_STEPS = 64


class _OutOfBudget(Exception):
    pass


def _pull(stack: list[tuple[Iterator[int], bool]]) -> tuple[int, bool] | None:
    while stack:
        it, seed = stack[-1]
        for x in it:
            return x, seed
        stack.pop()
    return None
