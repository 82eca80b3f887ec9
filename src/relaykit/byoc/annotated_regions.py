"""TVM's ``relay.analysis.AnnotatedRegionSet``: the regions of an annotated function as
objects a script can query (the partitioner itself works on :mod:`.regions`' union-find).

A region holds its ``target``, its ``args`` (the ``compiler_begin`` calls that open it),
its ``rets`` (the ``compiler_end`` calls that close it) and all its ``nodes``
(annotations included); ``get_region(node)`` finds the region of a node, if any.

>>> from relaykit import relay
>>> from relaykit.op.annotation import compiler_begin, compiler_end
>>> x = relay.var("x", shape=(2,))
>>> begin = compiler_begin(x, "lib")
>>> end = compiler_end(relay.abs(begin), "lib")
>>> regions = AnnotatedRegionSet(relay.Function([x], end))
>>> region = regions.get_region(end)
>>> len(regions), region.target, region.args == [begin], region.rets == [end]
(1, 'lib', True, True)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from relaykit.ir.expr import Call, Expr, Function

from ._common import annotation_ops
from .regions import find_regions

__all__ = ["AnnotatedRegion", "AnnotatedRegionSet"]


class AnnotatedRegion:
    """One region: ``id`` (the number of its first ``compiler_begin``), ``target``,
    ``args``, ``nodes`` and ``rets``."""

    def __init__(self, rid: int, target: str, nodes: list[Expr], begin: Any, end: Any) -> None:
        self.id = rid
        self.target = target
        self.nodes = list(nodes)
        self.args = [n for n in nodes if type(n) is Call and n.op is begin]
        self.rets = [n for n in nodes if type(n) is Call and n.op is end]

    def __repr__(self) -> str:
        return f"AnnotatedRegion(id={self.id}, target={self.target!r}, {len(self.nodes)} nodes)"


class AnnotatedRegionSet:
    """The regions of ``expr`` delimited by ``begin`` / ``end`` (default: relaykit's
    ``annotation.compiler_begin`` / ``compiler_end``; TVM passes those ops)."""

    def __init__(self, expr: Expr, begin: Any = None, end: Any = None) -> None:
        default_begin, default_end = annotation_ops()
        begin = begin if begin is not None else default_begin
        end = end if end is not None else default_end
        root = expr.body if isinstance(expr, Function) else expr
        rs = find_regions(root)
        members = rs.members()
        self._regions = [
            AnnotatedRegion(rs.label(r), rs.target(r), members.get(r, []), begin, end)
            for r in rs.roots()
        ]
        self._by_node = {n: reg for reg in self._regions for n in reg.nodes}

    def get_region(self, node: Expr) -> AnnotatedRegion | None:
        """The region ``node`` belongs to, or None."""
        return self._by_node.get(node)

    def __len__(self) -> int:
        return len(self._regions)

    def __iter__(self) -> Iterator[AnnotatedRegion]:
        return iter(self._regions)
