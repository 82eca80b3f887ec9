"""A top-down layered layout of a DAG, as netron draws a model.

The classic Sugiyama steps, each linear or near-linear in the graph's size so
that graphs of thousands of operators lay out in about a second:

1. *Layers*: longest path from the sources (a source sits just above its first
   consumer), so every edge points downwards.
2. *Dummy nodes*: an edge that spans several layers gets a chain of narrow
   dummy nodes, one per layer, so it can bend around the nodes in between;
   edges spanning more than ``MAX_SPAN`` layers (a mask read by every layer of a
   transformer) run down a lane right of the graph instead, one lane per source.
3. *Order*: barycentric sweeps down and up, keeping the order with the fewest
   crossings (counted exactly, with a Fenwick tree). Nodes may be given *groups*
   (a partition's regions): the members of a group, and the dummies of the edges
   inside it, stay side by side in every layer, so a box per layer drawn around
   them (``Layout.spans``) holds nothing else.
4. *Coordinates*: each node is pulled towards the mean position of its
   neighbours; the exact least-squares placement that keeps each layer's order
   and spacing is an isotonic regression, solved by pool-adjacent-violators.

>>> lay = layout([40, 40, 40], [(0, 1), (0, 2)])
>>> [b.layer for b in lay.boxes]
[0, 1, 1]
>>> lay.boxes[1].x + lay.boxes[1].width <= lay.boxes[2].x  # no overlap in a layer
True
>>> [(e.source, e.target) for e in lay.edges]
[(0, 1), (0, 2)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from relaykit.errors import IRError

__all__ = ["Box", "Edge", "Layout", "layout", "NODE_HEIGHT"]

NODE_HEIGHT = 24.0
LAYER_GAP = 34.0
NODE_GAP = 16.0
#: The gap between neighbours of different groups (room for both groups' outlines).
GROUP_GAP = 36.0
DUMMY_WIDTH = 4.0
MARGIN = 20.0
MAX_SPAN = 64
LANE_GAP = 10.0
SWEEPS = 4


@dataclass(frozen=True)
class Box:
    """Where one node is drawn: top-left corner, size and layer."""

    x: float
    y: float
    width: float
    height: float
    layer: int

    @property
    def cx(self) -> float:
        return self.x + self.width / 2


@dataclass(frozen=True)
class Edge:
    """One edge, as the points of its path from the source's bottom to the target's top."""

    source: int
    target: int
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Layout:
    """The result of :func:`layout`; ``boxes[i]`` is node ``i``."""

    boxes: list[Box]
    edges: list[Edge]
    width: float
    height: float
    #: Per group: ``(layer, left, right)`` of its members (and its edges' dummies) in
    #: every layer it has some, top to bottom.
    spans: dict[int, list[tuple[int, float, float]]] = field(default_factory=dict)


def layout(
    widths: Sequence[float],
    edges: Sequence[tuple[int, int]],
    *,
    height: float = NODE_HEIGHT,
    groups: Sequence[int] | None = None,
) -> Layout:
    """Lay out the DAG with nodes ``0..len(widths)-1`` and ``edges`` top-down;
    ``groups[v] >= 0`` puts node ``v`` in that group (kept together in each layer)."""
    n = len(widths)
    pairs = list(dict.fromkeys((u, v) for u, v in edges if u != v))
    for u, v in pairs:
        if not (0 <= u < n and 0 <= v < n):
            raise IRError(f"edge ({u}, {v}) names a node outside 0..{n - 1}")
    if groups is not None and len(groups) != n:
        raise IRError(f"{len(groups)} groups given for {n} nodes")
    layer = _layers(n, pairs)
    g = _Graph(n, [float(w) for w in widths], layer, groups)
    chains = [g.connect(u, v) for u, v in pairs]
    g.order()
    g.place()
    for chain in chains:
        g.straighten(chain)
    step = height + LAYER_GAP
    boxes = [
        Box(g.x[v] - g.width[v] / 2, MARGIN + layer[v] * step, g.width[v], height, layer[v])
        for v in range(n)
    ]
    ports = _ports(pairs, boxes)
    right = max((b.x + b.width for b in boxes), default=0.0)
    lanes: dict[int, float] = {}
    out: list[Edge] = []
    for (u, v), chain in zip(pairs, chains, strict=True):
        src, dst = boxes[u], boxes[v]
        pts = [(src.cx, src.y + height)]
        for d in chain:
            top = MARGIN + g.layer[d] * step
            pts += [(g.x[d], top), (g.x[d], top + height)]
        if not chain and dst.layer - src.layer > 1:
            # too long for dummies: down a lane right of the graph, one lane per source
            lane = lanes.setdefault(u, right + LANE_GAP * (len(lanes) + 1))
            pts += [(lane, src.y + height + LAYER_GAP / 2), (lane, dst.y - LAYER_GAP / 2)]
        pts.append((ports[u, v], dst.y))
        out.append(Edge(u, v, tuple(pts)))
    right += LANE_GAP * len(lanes)
    bottom = max((b.y + b.height for b in boxes), default=0.0)
    return Layout(boxes, out, right + MARGIN, bottom + MARGIN, g.spans())


def _layers(n: int, pairs: list[tuple[int, int]]) -> list[int]:
    """Longest-path layers; sources are moved down next to their first consumer."""
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for u, v in pairs:
        succ[u].append(v)
        indeg[v] += 1
    ready = [v for v in range(n) if indeg[v] == 0]
    sources = list(ready)
    layer = [0] * n
    seen = 0
    while ready:
        u = ready.pop()
        seen += 1
        for v in succ[u]:
            layer[v] = max(layer[v], layer[u] + 1)
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    if seen != n:
        raise IRError("the edges form a cycle: only a DAG can be laid out in layers")
    for v in sources:
        if succ[v]:
            layer[v] = min(layer[s] for s in succ[v]) - 1
    return layer


def _ports(pairs: list[tuple[int, int]], boxes: list[Box]) -> dict[tuple[int, int], float]:
    """Where each edge enters its target: spread along the top, sorted by source."""
    into: dict[int, list[int]] = {}
    for u, v in pairs:
        into.setdefault(v, []).append(u)
    ports: dict[tuple[int, int], float] = {}
    for v, us in into.items():
        box = boxes[v]
        us.sort(key=lambda u: boxes[u].cx)
        for i, u in enumerate(us):
            ports[u, v] = box.x + box.width * (i + 1) / (len(us) + 1)
    return ports


class _Graph:
    """The layered graph with dummy nodes: order within layers, then x positions."""

    def __init__(
        self, n: int, widths: list[float], layer: list[int], groups: Sequence[int] | None
    ) -> None:
        self.width = widths
        self.layer = layer
        self.group = list(groups) if groups is not None else [-1] * n
        self.pred: list[list[int]] = [[] for _ in range(n)]
        self.succ: list[list[int]] = [[] for _ in range(n)]
        self.budget = 3 * n + 1000
        self.x: list[float] = []

    def _add(self, layer: int, group: int) -> int:
        self.width.append(DUMMY_WIDTH)
        self.layer.append(layer)
        self.group.append(group)
        self.pred.append([])
        self.succ.append([])
        return len(self.layer) - 1

    def connect(self, u: int, v: int) -> list[int]:
        """Adds edge ``u -> v`` through dummies; returns the dummies, top to bottom."""
        span = self.layer[v] - self.layer[u]
        if span > MAX_SPAN or span - 1 > self.budget:
            return []  # drawn directly; does not steer the order
        group = self.group[u] if self.group[u] == self.group[v] else -1
        chain = [self._add(self.layer[u] + k, group) for k in range(1, span)]
        self.budget -= len(chain)
        path = [u, *chain, v]
        for a, b in pairwise(path):
            self.succ[a].append(b)
            self.pred[b].append(a)
        return chain

    def order(self) -> None:
        depth = max(self.layer, default=-1) + 1
        self.layers: list[list[int]] = [[] for _ in range(depth)]
        for v, lay in enumerate(self.layer):
            self.layers[lay].append(v)
        for r, row in enumerate(self.layers):  # groups side by side from the start
            first: dict[int, int] = {}
            anchor = [
                first.setdefault(self.group[v], i) if self.group[v] >= 0 else i
                for i, v in enumerate(row)
            ]
            self.layers[r] = [
                v for _, _, v in sorted(zip(anchor, range(len(row)), row, strict=True))
            ]
        self.pos = [0] * len(self.layer)
        self._number()
        best, best_cost = [list(r) for r in self.layers], self._crossings()
        for _ in range(SWEEPS):
            for rank in range(1, depth):
                self._sort(rank, self.pred)
            for rank in range(depth - 2, -1, -1):
                self._sort(rank, self.succ)
            cost = self._crossings()
            if cost < best_cost:
                best, best_cost = [list(r) for r in self.layers], cost
        self.layers = best
        self._number()

    def _number(self) -> None:
        for row in self.layers:
            for i, v in enumerate(row):
                self.pos[v] = i

    def _sort(self, rank: int, nbrs: list[list[int]]) -> None:
        pos, group = self.pos, self.group
        keyed: list[tuple[float, int, float, int, int]] = []
        total: dict[int, list[float]] = {}
        for v in self.layers[rank]:
            ns = nbrs[v]
            bc = sum(pos[w] for w in ns) / len(ns) if ns else float(pos[v])
            keyed.append((bc, group[v], bc, pos[v], v))
            if group[v] >= 0:
                acc = total.setdefault(group[v], [0.0, 0.0])
                acc[0] += bc
                acc[1] += 1.0
        if total:  # a group's members all sort at their mean barycentre, side by side
            keyed = [
                (total[k][0] / total[k][1] if k >= 0 else key, k, bc, p, v)
                for key, k, bc, p, v in keyed
            ]
        keyed.sort()
        row = [v for *_, v in keyed]
        self.layers[rank] = row
        for i, v in enumerate(row):
            pos[v] = i

    def spans(self) -> dict[int, list[tuple[int, float, float]]]:
        """Per group, per layer it occupies: the left and right ends of its members."""
        ends: dict[int, dict[int, list[float]]] = {}
        for v, k in enumerate(self.group):
            if k < 0:
                continue
            lo, hi = self.x[v] - self.width[v] / 2, self.x[v] + self.width[v] / 2
            row = ends.setdefault(k, {}).setdefault(self.layer[v], [lo, hi])
            row[0], row[1] = min(row[0], lo), max(row[1], hi)
        return {
            k: [(lay, a, b) for lay, (a, b) in sorted(rows.items())] for k, rows in ends.items()
        }

    def _crossings(self) -> int:
        total = 0
        for row in self.layers[:-1]:
            ends = sorted((self.pos[u], self.pos[v]) for u in row for v in self.succ[u])
            total += _inversions([b for _, b in ends])
        return total

    def place(self) -> None:
        """x centres: every node pulled to its neighbours' mean, order and gaps kept."""
        self.x = [0.0] * len(self.layer)
        for row in self.layers:
            self._pack(row, [0.0] * len(row))
        both = [p + s for p, s in zip(self.pred, self.succ, strict=True)]
        passes = [self.pred, self.succ, self.pred, self.succ, both, both, both]
        depth = len(self.layers)
        for k, nbrs in enumerate(passes):
            ranks = range(depth) if k % 2 == 0 else range(depth - 1, -1, -1)
            for rank in ranks:
                row = self.layers[rank]
                want = [
                    sum(self.x[w] for w in nbrs[v]) / len(nbrs[v]) if nbrs[v] else self.x[v]
                    for v in row
                ]
                self._pack(row, want)
        left = min((self.x[v] - self.width[v] / 2 for v in range(len(self.x))), default=0.0)
        self.x = [x - left + MARGIN for x in self.x]

    def straighten(self, chain: list[int]) -> None:
        """Moves the dummies of one long edge onto one vertical line (their median x)
        when that collides with nothing, so the edge runs straight past the layers."""
        if len(chain) < 2:
            return
        x = sorted(self.x[d] for d in chain)[len(chain) // 2]
        half = DUMMY_WIDTH / 2 + NODE_GAP
        for d in chain:
            row, i = self.layers[self.layer[d]], self.pos[d]
            if i > 0 and self.x[row[i - 1]] + self.width[row[i - 1]] / 2 + half > x:
                return
            if i + 1 < len(row) and self.x[row[i + 1]] - self.width[row[i + 1]] / 2 - half < x:
                return
        for d in chain:
            self.x[d] = x

    def _pack(self, row: list[int], want: list[float]) -> None:
        """The x centres closest (least squares) to ``want`` that keep ``row``'s order
        and at least ``NODE_GAP`` between neighbours (``GROUP_GAP`` where a group ends)."""
        offsets = [0.0] * len(row)
        for i in range(1, len(row)):
            a, b = self.width[row[i - 1]], self.width[row[i]]
            ga, gb = self.group[row[i - 1]], self.group[row[i]]
            gap = NODE_GAP if ga == gb or (ga < 0 and gb < 0) else GROUP_GAP
            offsets[i] = offsets[i - 1] + (a + b) / 2 + gap
        shifted = [w - o for w, o in zip(want, offsets, strict=True)]
        for v, d, o in zip(row, _isotonic(shifted), offsets, strict=True):
            self.x[v] = d + o


def _isotonic(values: list[float]) -> list[float]:
    """The non-decreasing sequence closest to ``values`` in least squares (PAVA)."""
    blocks: list[list[float]] = []  # [mean, count]
    for v in values:
        blocks.append([v, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, c2 = blocks.pop()
            m1, c1 = blocks[-1]
            blocks[-1] = [(m1 * c1 + m2 * c2) / (c1 + c2), c1 + c2]
    out: list[float] = []
    for mean, count in blocks:
        out.extend([mean] * int(count))
    return out


def _inversions(seq: list[int]) -> int:
    """Pairs ``i < j`` with ``seq[i] > seq[j]`` (a Fenwick tree over the values)."""
    if not seq:
        return 0
    size = max(seq) + 2
    tree = [0] * size
    count = 0
    for seen, value in enumerate(seq):
        i, le = value + 1, 0
        while i > 0:
            le += tree[i]
            i -= i & -i
        count += seen - le
        i = value + 1
        while i < size:
            tree[i] += 1
            i += i & -i
    return count
