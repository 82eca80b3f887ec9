"""Static memory planning: assign every entry a storage, reusing buffers by liveness.

Graph inputs and parameters get their own buffers. Each other entry gets a
block of a shared pool: blocks whose tensors are dead are reused (best fit,
growing the largest free block when none fits, as TVM's planner does), an
elementwise or broadcast operator writes in place into an input that dies at
it (same size and dtype), and a view operator (reshape, batch_flatten...)
shares its input's storage. Graph outputs are never reused.

:func:`memory_report` compares the pool with what every intermediate tensor
in its own buffer (an executor without a plan, like the interpreter) needs.

>>> from relaykit.execution.graph_plan import EntrySpec, PlanNode
>>> es = [EntrySpec((4,), "float32"), EntrySpec((4,), "float32"), EntrySpec((4,), "float32")]
>>> ns = [PlanNode("input", "x", outputs=(0,)),
...       PlanNode("op", "exp", inputs=(0,), outputs=(1,)),
...       PlanNode("op", "nn.relu", inputs=(1,), outputs=(2,))]
>>> entries, storage = plan_memory(es, ns, heads=[2], inplace_ops={"nn.relu"})
>>> [e.storage for e in entries], [s.kind for s in storage]
([0, 1, 1], ['input', 'pool'])
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from .graph_plan import EntrySpec, GraphPlan, PlanNode, StorageSpec

__all__ = ["plan_memory", "MemoryReport", "memory_report"]

_FOREVER = 1 << 62


def plan_memory(
    entries: Sequence[EntrySpec],
    nodes: Sequence[PlanNode],
    heads: Sequence[int],
    inplace_ops: Collection[str] = (),
) -> tuple[list[EntrySpec], list[StorageSpec]]:
    """Entries with storage ids, and the storage table. ``inplace_ops``: operators that may
    write into a dying input of the same size and dtype."""
    root = _view_roots(len(entries), nodes)
    planner = _Planner(entries, root, _last_uses(root, nodes, heads), inplace_ops)
    place_pinned, place_view, place_computed = (
        planner.place_pinned,
        planner.place_view,
        planner.place_computed,
    )
    for step, node in enumerate(nodes):
        kind = node.kind
        if kind == "op" and node.view:
            place_view(node)
        elif kind in ("input", "param"):
            place_pinned(node)
        else:
            place_computed(node, step)
    return planner.result()


def _view_roots(n: int, nodes: Sequence[PlanNode]) -> list[int]:
    """For each entry, the entry whose storage it uses (a view shares its input's)."""
    root = list(range(n))
    for node in nodes:
        if node.kind == "op" and node.view:
            root[node.outputs[0]] = root[node.inputs[0]]
    return root


def _last_uses(root: list[int], nodes: Sequence[PlanNode], heads: Sequence[int]) -> list[int]:
    """For each root entry, the last step that reads or writes it (graph outputs: never)."""
    last_use = [-1] * len(root)
    for step, node in enumerate(nodes):
        for e in node.outputs:
            r = root[e]
            last_use[r] = max(last_use[r], step)
        for e in node.inputs:
            r = root[e]
            last_use[r] = max(last_use[r], step)
    for h in heads:
        last_use[root[h]] = _FOREVER
    return last_use


class _Planner:
    """The state of one planning run: storage per entry, the pool's blocks, free blocks."""

    def __init__(
        self,
        entries: Sequence[EntrySpec],
        root: list[int],
        last_use: list[int],
        inplace_ops: Collection[str],
    ) -> None:
        n = len(entries)
        self.entries = entries
        self.root = root
        self.last_use = last_use
        self.inplace_ops = inplace_ops
        self.pinned = [False] * n  # inputs and params: never pooled, never written in place
        self.entry_storage = [-1] * n
        self.storage: list[StorageSpec] = []
        self.block_size: list[int] = []  # pool blocks, by storage id
        self.free_sizes: list[tuple[int, int]] = []  # sorted (size, storage id)

    def take(self, nbytes: int) -> int:
        """A free block of at least ``nbytes`` (best fit), else the largest grown, else new."""
        free_sizes = self.free_sizes
        i = bisect.bisect_left(free_sizes, (nbytes, -1))
        if i < len(free_sizes):
            _, sid = free_sizes.pop(i)
            return sid
        if free_sizes:  # grow the largest free block rather than add one
            _, sid = free_sizes.pop()
            self.block_size[sid] = nbytes
            return sid
        self.storage.append(StorageSpec("pool", 0))
        self.block_size.append(nbytes)
        return len(self.storage) - 1

    def place_pinned(self, node: PlanNode) -> None:
        """A graph input or parameter: a buffer of its own."""
        e = node.outputs[0]
        nbytes = self.entries[e].nbytes
        self.storage.append(StorageSpec(node.kind, nbytes))
        self.block_size.append(nbytes)
        self.entry_storage[e] = len(self.storage) - 1
        self.pinned[e] = True

    def place_view(self, node: PlanNode) -> None:
        """A view: its input's storage."""
        out, src = node.outputs[0], node.inputs[0]
        self.entry_storage[out] = self.entry_storage[src]
        self.pinned[out] = self.pinned[self.root[src]]

    def place_computed(self, node: PlanNode, step: int) -> None:
        """Storage for the outputs of an op or extern node (in place into a dying input
        when allowed, else a pool block); then the blocks of tensors dying here are free."""
        entries, entry_storage, block_size = self.entries, self.entry_storage, self.block_size
        reused: set[int] = set()
        inplace = node.kind == "op" and node.name in self.inplace_ops and len(node.outputs) == 1
        root, last_use, pinned = self.root, self.last_use, self.pinned
        for e in node.outputs:
            spec = entries[e]
            sid = -1
            if inplace:  # into an input that dies here, of the same size and dtype
                for x in node.inputs:
                    r = root[x]
                    cand = entry_storage[x]
                    if (
                        not pinned[r]
                        and last_use[r] == step
                        and entries[x].nbytes == spec.nbytes
                        and entries[x].dtype == spec.dtype
                        and cand not in reused
                    ):
                        sid = cand
                        break
            if sid >= 0:
                reused.add(sid)
            else:
                sid = self.take(spec.nbytes)
                if block_size[sid] < spec.nbytes:
                    block_size[sid] = spec.nbytes
            entry_storage[e] = sid
        freed: set[int] = set()
        for e in (*node.inputs, *node.outputs):
            r = root[e]
            sid = entry_storage[e]
            if pinned[r] or last_use[r] != step or sid in reused or sid in freed:
                continue
            freed.add(sid)
            bisect.insort(self.free_sizes, (block_size[sid], sid))

    def result(self) -> tuple[list[EntrySpec], list[StorageSpec]]:
        storage = self.storage
        for sid, spec in enumerate(storage):
            if spec.kind == "pool":
                storage[sid] = StorageSpec("pool", self.block_size[sid])
        planned = [
            EntrySpec(e.shape, e.dtype, s)
            for e, s in zip(self.entries, self.entry_storage, strict=True)
        ]
        return planned, storage


@dataclass(frozen=True)
class MemoryReport:
    """Bytes of intermediate tensors (graph inputs and parameters not counted).

    ``unplanned``: every intermediate in its own buffer (no plan); ``planned``:
    the pool of the static plan; ``live_peak``: the most bytes that must be kept
    between two steps (a lower bound for any plan); ``workspace``: executor scratch,
    when known.
    """

    unplanned: int
    planned: int
    live_peak: int
    workspace: int = 0

    def __str__(self) -> str:
        mib = 1 << 20
        return (
            f"intermediates: {self.unplanned / mib:.2f} MiB without a plan, "
            f"{self.planned / mib:.2f} MiB planned (+{self.workspace / mib:.2f} MiB workspace), "
            f"{self.live_peak / mib:.2f} MiB live at peak"
        )


def memory_report(plan: GraphPlan, workspace: int = 0) -> MemoryReport:
    """The :class:`MemoryReport` of a planned graph."""
    entries, nodes = plan.entries, plan.nodes
    produced: list[int] = []
    for node in nodes:
        if node.kind == "extern" or (node.kind == "op" and not node.view):
            produced.extend(node.outputs)
    unplanned = sum(entries[e].nbytes for e in produced)
    planned = sum(s.nbytes for s in plan.storage if s.kind == "pool")
    # Liveness of each produced tensor (with its views): from its step to its last reader.
    # It is held between steps born..dies-1 (an unread tensor never is).
    root = list(range(len(entries)))
    for node in nodes:
        if node.kind == "op" and node.view:
            root[node.outputs[0]] = root[node.inputs[0]]
    born: dict[int, int] = {}
    dies: dict[int, int] = {}
    for step, node in enumerate(nodes):
        for e in node.outputs:
            born.setdefault(root[e], step)
            dies[root[e]] = max(dies.get(root[e], step), step)
        for e in node.inputs:
            if root[e] in born:
                dies[root[e]] = max(dies[root[e]], step)
    for h in plan.heads:
        if root[h] in dies:
            dies[root[h]] = len(nodes)
    delta = [0] * (len(nodes) + 2)
    for e in set(produced):
        r = root[e]
        if r != e:
            continue
        delta[born[r]] += entries[r].nbytes  # alive after its step...
        delta[dies[r]] -= entries[r].nbytes  # ...until after its last reader's step
    peak = cur = 0
    for d in delta:
        cur += d
        peak = max(peak, cur)
    return MemoryReport(unplanned, planned, peak, workspace)
