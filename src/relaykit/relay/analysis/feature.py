"""``tvm.relay.analysis.feature``: which language features a program uses.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> sorted(f.name for f in detect_feature(relay.Function([x], x + x)))
['fCall', 'fFunction', 'fOp', 'fVar']
"""

from __future__ import annotations

import enum
from typing import Any

from relaykit.ir.adt import Constructor, Match
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
)
from relaykit.ir.functor import children, post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.ref import RefCreate, RefRead, RefWrite

__all__ = ["Feature", "detect_feature"]


class Feature(enum.IntEnum):
    """A language feature, as TVM numbers them."""

    fVar = 0
    fGlobalVar = 1
    fConstant = 2
    fTuple = 3
    fTupleGetItem = 4
    fFunction = 5
    fOp = 6
    fCall = 7
    fLet = 8
    fIf = 9
    fRefCreate = 10
    fRefRead = 11
    fRefWrite = 12
    fConstructor = 13
    fMatch = 14
    #: a non-atomic expression is used more than once (the program is a graph, not a tree)
    fGraph = 15
    #: a let-bound function refers to its own variable
    fLetRec = 16


_NODE_FEATURES: dict[type, Feature] = {
    Var: Feature.fVar,
    GlobalVar: Feature.fGlobalVar,
    Constant: Feature.fConstant,
    Tuple: Feature.fTuple,
    TupleGetItem: Feature.fTupleGetItem,
    Function: Feature.fFunction,
    Op: Feature.fOp,
    Call: Feature.fCall,
    Let: Feature.fLet,
    If: Feature.fIf,
    Constructor: Feature.fConstructor,
    Match: Feature.fMatch,
    RefCreate: Feature.fRefCreate,
    RefRead: Feature.fRefRead,
    RefWrite: Feature.fRefWrite,
}
_ATOMS = (Var, GlobalVar, Constant, Op, Constructor)


def _refers_to(value: Expr, var: Var) -> bool:
    return isinstance(value, Function) and any(v is var for v in post_order(value))


def _expr_features(expr: Expr) -> set[Feature]:
    found: set[Feature] = set()
    uses: dict[int, int] = {}
    node: Any
    for node in post_order(expr):
        feature = next((f for cls, f in _NODE_FEATURES.items() if isinstance(node, cls)), None)
        if feature is not None:
            found.add(feature)
        for child in children(node):
            if not isinstance(child, _ATOMS):
                uses[id(child)] = uses.get(id(child), 0) + 1
        if isinstance(node, Let) and _refers_to(node.value, node.var):
            found.add(Feature.fLetRec)
    if any(n > 1 for n in uses.values()):
        found.add(Feature.fGraph)
    return found


def detect_feature(a: Expr | IRModule, b: Expr | IRModule | None = None) -> set[Feature]:
    """The set of :class:`Feature` used by an expression or a module (or both)."""
    found: set[Feature] = set()
    for item in (a, b):
        if isinstance(item, IRModule):
            for _, fn in item.functions.items():
                found |= _expr_features(fn)
        elif item is not None:
            found |= _expr_features(item)
    return found
