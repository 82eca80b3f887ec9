"""Regions delimited by ``compiler_begin`` / ``compiler_end`` (TVM's ``AnnotatedRegionSet``).

Walking the graph inputs-first, every ``compiler_begin`` opens a new region
(numbered in walk order, as TVM numbers them); a node whose arguments lie in
open regions joins them, merging them into the region of its first such
argument; a ``compiler_end`` closes its argument's region. The walk is
iterative and the regions are a union-find, so finding them is linear.

>>> from relaykit import relay
>>> from relaykit.byoc._common import make_begin, make_end
>>> x = relay.var("x", shape=(2,))
>>> y = make_end(relay.nn.relu(make_begin(x, "lib")), "lib")
>>> rs = find_regions(y)
>>> [(rs.label(r), rs.target(r)) for r in rs.roots()]
[(0, 'lib')]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from relaykit.ir.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from relaykit.ir.op import Op

from ._common import (
    DEFAULT_TARGET,
    PartitionError,
    annotation_ops,
    annotation_target,
    data_children,
)

__all__ = ["RegionSet", "find_regions", "walk", "region_args"]


def walk(root: Expr) -> list[Expr]:
    """Every node under ``root`` once, inputs before users (composite bodies excluded)."""
    order: list[Expr] = []
    append = order.append
    seen = {id(root)}
    add = seen.add
    stack = [(root, iter(data_children(root)))]
    push, pop = stack.append, stack.pop
    kid: Any
    while stack:
        node, kids = stack[-1]
        for kid in kids:
            key = id(kid)
            if key not in seen:
                add(key)
                t = type(kid)
                if t is Call and type(kid.op) is Op:
                    grand = kid.args
                elif t is Tuple:
                    grand = kid.fields
                else:
                    grand = data_children(kid)
                push((kid, iter(grand)))
                break
        else:
            pop()
            append(node)
    return order


def region_args(node: Expr) -> tuple[Expr, ...]:
    """The arguments through which ``node`` joins open regions (TVM's choice per kind)."""
    n: Any = node  # dispatched on ``type(n)`` below
    t = type(n)
    if t is Call:
        return n.args
    if t is Tuple:
        return n.fields
    if t is TupleGetItem:
        return (n.tuple_value,)
    if t is Let:
        return (n.var, n.value, n.body)
    if t is If:
        return (n.cond, n.true_branch, n.false_branch)
    return ()


def _context(node: Expr) -> str:
    try:
        text = str(node)
    except Exception:  # pragma: no cover - printing is best effort
        return type(node).__name__
    lines = text.splitlines()
    return "\n".join(("    " + line) for line in lines[-6:])


class RegionSet:
    """The regions of one function body (see the module docstring)."""

    def __init__(self, order: list[Expr]) -> None:
        self.order = order
        self.region_of: dict[Expr, int] = {}
        self._parent: list[int] = []
        self._size: list[int] = []
        self._label: list[int] = []
        self._target: list[str] = []

    # -- union-find --------------------------------------------------------------
    def new_region(self, target: str) -> int:
        r = len(self._parent)
        self._parent.append(r)
        self._size.append(1)
        self._label.append(r)
        self._target.append(target)
        return r

    def find(self, r: int) -> int:
        parent = self._parent
        root = r
        while parent[root] != root:
            root = parent[root]
        while parent[r] != root:
            parent[r], r = root, parent[r]
        return root

    def merge(self, src: int, dest: int) -> int:
        """Merge region ``src`` into ``dest``; the result keeps ``dest``'s label."""
        a, b = self.find(src), self.find(dest)
        if a == b:
            return a
        label = self._label[b]
        if self._size[a] > self._size[b]:
            a, b = b, a
        self._parent[a] = b
        self._size[b] += self._size[a]
        self._label[b] = label
        return b

    # -- queries -----------------------------------------------------------------
    def region(self, node: Expr) -> int | None:
        """The (root) region of ``node``, or None when it is outside every region."""
        r = self.region_of.get(node)
        return None if r is None else self.find(r)

    def label(self, root: int) -> int:
        """TVM's id of a region: the number of the ``compiler_begin`` that opened it."""
        return self._label[self.find(root)]

    def target(self, root: int) -> str:
        return self._target[self.find(root)]

    def root_table(self) -> list[int]:
        """The root of every region ever opened, for lookups after the regions are final."""
        find = self.find
        return [find(r) for r in range(len(self._parent))]

    def size(self) -> int:
        """How many regions were opened (merged ones included)."""
        return len(self._parent)

    def roots(self) -> list[int]:
        """The regions, by label."""
        roots = {self.find(r) for r in range(len(self._parent))}
        return sorted(roots, key=lambda r: self._label[r])

    def members(self) -> dict[int, list[Expr]]:
        """Nodes of every region (annotations included), in walk order."""
        out: dict[int, list[Expr]] = {}
        region_of, find = self.region_of, self.find
        for node in self.order:
            r = region_of.get(node)
            if r is not None:
                out.setdefault(find(r), []).append(node)
        return out

    def __iter__(self) -> Iterator[int]:
        return iter(self.roots())

    def __len__(self) -> int:
        return len(self.roots())


def find_regions(
    root: Expr, order: list[Expr] | None = None, skip_default: bool = False
) -> RegionSet:
    """The regions of the annotated expression ``root``; with ``skip_default``,
    ``"default"`` annotations are ignored (their operators are host code).

    One pass inputs-first: a ``compiler_begin`` opens a region (inline: they are the
    most common nodes), a ``compiler_end`` closes one (:func:`_closed_region`), any
    other node joins the open regions of its arguments (:func:`_join_regions` when it
    has several)."""
    begin_op, end_op = annotation_ops()
    rs = RegionSet(walk(root) if order is None else order)
    region_of = rs.region_of
    get = region_of.get
    find = rs.find
    parent, size, label, targets = rs._parent, rs._size, rs._label, rs._target
    attr_target: dict[int, str] = {}  # annotation attrs are shared: id -> compiler
    node: Any
    for node in rs.order:
        t = type(node)
        if t is Call:
            op = node.op
            if op is begin_op or op is end_op:
                target = attr_target.get(id(node.attrs))
                if target is None:
                    target = attr_target[id(node.attrs)] = annotation_target(node)
                if skip_default and target == DEFAULT_TARGET:
                    continue
                if op is begin_op:
                    fresh = len(parent)
                    parent.append(fresh)
                    size.append(1)
                    label.append(fresh)
                    targets.append(target)
                    region_of[node] = fresh
                else:
                    region_of[node] = _closed_region(rs, node, target)
                continue
            args = node.args
        elif t is Var or t is Constant or t is Op or t is Function:
            continue
        else:
            args = region_args(node)
        dest: int | None = None
        for a in args:
            if type(a) is Call and a.op is end_op:
                continue
            r = get(a)
            if r is not None:
                dest = find(r)
                break
        if dest is None:
            continue
        if len(args) > 1:
            dest = _join_regions(rs, node, args, dest, end_op)
        region_of[node] = dest
    return rs


def _closed_region(rs: RegionSet, end: Call, target: str) -> int:
    """The region the ``compiler_end`` ``end`` of ``target`` closes (checked)."""
    r = rs.region_of.get(end.args[0])
    if r is None:
        raise PartitionError(
            f"compiler_end(..., {target!r}) closes no region: its argument is "
            "not inside a compiler_begin of the same target\n" + _context(end)
        )
    r = rs.find(r)
    if rs._target[r] != target:
        raise PartitionError(
            f"compiler_end(..., {target!r}) closes a region of target "
            f"{rs._target[r]!r}\n" + _context(end)
        )
    return r


def _join_regions(rs: RegionSet, node: Expr, args: tuple[Expr, ...], dest: int, end_op: Op) -> int:
    """Merges the open regions of all of ``args`` into ``dest`` (the region of the first
    one) and returns the result; every argument must be in a region of the same target,
    closed, or a constant."""
    get, find, targets = rs.region_of.get, rs.find, rs._target
    for a in args:
        if type(a) is Call and a.op is end_op:
            continue
        r = get(a)
        if r is None:
            if type(a) is Constant or (type(a) is Tuple and not a.fields):
                continue
            raise PartitionError(
                "an argument of a node inside a region is neither annotated with "
                "compiler_begin nor inside the region:\n"
                + _context(a)
                + "\n  used by:\n"
                + _context(node)
            )
        r = find(r)
        if r != dest:
            if targets[r] != targets[dest]:
                raise PartitionError(
                    f"a node joins regions of different targets ({targets[dest]!r} and "
                    f"{targets[r]!r}); put compiler_end/compiler_begin between them\n"
                    + _context(node)
                )
            dest = rs.merge(r, dest)
    return dest
