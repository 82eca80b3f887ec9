"""Typing only what a rewrite created: nodes that already carry a checked type are
trusted (nodes are immutable, so their subtrees are unchanged and typed too).

Full type inference costs a walk of the whole function; after a rewrite that
touched a few places (``MergeComposite`` wrapping matches) this types just the
new nodes. It uses the type inferencer of :mod:`relaykit.transform.infer_type`.

>>> from relaykit import relay
>>> from relaykit.ir import Function
>>> x = relay.var("x", shape=(2,))
>>> f = fill_types(Function([x], relay.nn.relu(x)))
>>> str(f.body.checked_type)
'Tensor[(2), float32]'
"""

from __future__ import annotations

from relaykit.ir.expr import Expr, Function
from relaykit.ir.module import IRModule
from relaykit.ir.types import FuncType
from relaykit.transform.infer_type import _Inferencer, _signature

from ._common import data_children

__all__ = ["fill_types"]


def _global_types(mod: IRModule | None) -> dict[str, FuncType]:
    gtypes: dict[str, FuncType] = {}
    if mod is None:
        return gtypes
    for gv, fn in mod.items():
        t = fn._checked_type if fn.has_checked_type else _signature(fn)
        if isinstance(t, FuncType):
            gtypes[gv.name_hint] = t
    return gtypes


def fill_types(func: Function, mod: IRModule | None = None) -> Function:
    """``func`` with a checked type on every node (new nodes inferred, others kept)."""
    if func.has_checked_type:
        return func
    inferencer = _Inferencer(func, _global_types(mod))
    done = inferencer.done
    # Seed the inferencer with the typed frontier: typed nodes are not descended into.
    seen: set[int] = set()
    stack: list[Expr] = [func]
    while stack:
        node = stack.pop()
        key = id(node)
        if key in seen:
            continue
        seen.add(key)
        ty = node._checked_type
        if ty is not None:
            done[key] = ty
            continue
        stack.extend(data_children(node))
        if type(node) is not Function:
            op = getattr(node, "op", None)
            if type(op) is Function:
                stack.append(op)
    inferencer.run()
    return func
