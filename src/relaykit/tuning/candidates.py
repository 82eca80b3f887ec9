"""Candidates: a run of units cut out as a function of its own, and its stable key.

A candidate's function takes the values flowing into the run as parameters and
returns the values flowing out (a tuple when there are several); constants stay
inside. Its key is a SHA-256 of its printed, typed text and of its constants'
shapes and dtypes (a latency depends on those, not on the weights' values), so
the same block met twice, in this model or in another, is measured once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from relaykit.ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.transform.infer_type import InferType

from .units import UnitGraph

__all__ = ["Candidate", "cut", "region_key"]


@dataclass(frozen=True)
class Candidate:
    """Units ``start`` to ``stop - 1`` of a :class:`UnitGraph` as one function."""

    start: int
    stop: int
    func: Function
    key: str
    names: tuple[str, ...]
    in_bytes: int
    out_bytes: int


def _bytes(ty: object) -> int:
    shape = getattr(ty, "shape", None)
    dtype = getattr(ty, "dtype", None)
    if shape is None or dtype is None or not all(isinstance(d, int) for d in shape):
        fields = getattr(ty, "fields", None)
        return sum(_bytes(f) for f in fields) if fields else 0
    n = 1
    for d in shape:
        n *= int(d)
    bits = int("".join(c for c in str(dtype) if c.isdigit()) or 32)
    return n * max(1, bits // 8)


def region_key(func: Function) -> str:
    """The stable key of a typed candidate function (see the module docstring)."""
    consts = [f"{n.data.shape}:{n.data.dtype}" for n in post_order(func) if isinstance(n, Constant)]
    text = func.astext(show_meta_data=False) + "\n" + ";".join(consts)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cut(graph: UnitGraph, start: int, stop: int) -> Candidate:
    """Units ``start`` .. ``stop - 1`` of ``graph`` as a typed function."""
    inside = set(range(start, stop))
    new: dict[Expr, Expr] = {}
    params: list[Var] = []

    def outer(e: Expr) -> Expr:
        """An expression read by the run: rebuilt from inside values, or a parameter."""
        if e in new:
            return new[e]
        if isinstance(e, Constant):
            return e
        idx = graph.index_of.get(e)
        if idx is not None and idx in inside:
            return new[e]
        if isinstance(e, Tuple):  # a tuple argument: its fields, each a parameter or not
            new[e] = Tuple([outer(f) for f in e.fields])
            return new[e]
        if isinstance(e, TupleGetItem) and any(p in inside for p in graph.producers(e)):
            new[e] = TupleGetItem(outer(e.tuple_value), e.index)
            return new[e]
        v = Var(f"p{len(params)}", e.checked_type)
        params.append(v)
        new[e] = v
        return v

    for i in range(start, stop):
        call = graph.units[i].call
        new[call] = Call(call.op, [outer(a) for a in call.args], call.attrs, call.type_args)
    # The values leaving the run: what later units or the function's result read.
    leaving: list[Expr] = []
    seen: set[Expr] = set()
    readers = [graph.units[j].call for j in range(stop, len(graph.units))]
    exprs = [a for c in readers for a in c.args] + [graph.func.body]
    for e in exprs:
        for leaf in _leaves(e, graph):
            if graph.index_of.get(_root(leaf, graph), -1) in inside and leaf not in seen:
                seen.add(leaf)
                leaving.append(leaf)
    outs = [outer(e) for e in leaving]
    body = outs[0] if len(outs) == 1 else Tuple(outs)
    mod = InferType()(IRModule.from_expr(Function(params, body)))
    func = mod["main"]
    in_bytes = sum(_bytes(p.checked_type) for p in func.params)
    out_bytes = _bytes(func.body.checked_type)
    names = tuple(graph.units[i].name for i in range(start, stop))
    return Candidate(start, stop, func, region_key(func), names, in_bytes, out_bytes)


def _root(e: Expr, graph: UnitGraph) -> Expr:
    while isinstance(e, TupleGetItem) and e not in graph.index_of:
        e = e.tuple_value
    return e


def _leaves(e: Expr, graph: UnitGraph) -> list[Expr]:
    """The unit values (or projections of them) ``e`` is made of, through tuples."""
    out: list[Expr] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Tuple) and x not in graph.index_of:
            stack.extend(x.fields)
        elif x in graph.index_of or isinstance(x, TupleGetItem):
            out.append(x)
    return out
