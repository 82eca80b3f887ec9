"""``tvm.relay.expr``: Relay's expression classes and constructors.

>>> from relaykit.relay import expr as _expr
>>> isinstance(_expr.const(1.0), _expr.Constant)
True
"""

from __future__ import annotations

from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    RelayExpr,
    Tuple,
    TupleGetItem,
    TupleWrapper,
    Var,
    const,
)
from relaykit.ir.ref import RefCreate, RefRead, RefWrite
from relaykit.transform.bind import bind

__all__ = [
    "Call",
    "Constant",
    "Expr",
    "Function",
    "GlobalVar",
    "If",
    "Let",
    "RelayExpr",
    "RefCreate",
    "RefRead",
    "RefWrite",
    "Tuple",
    "TupleGetItem",
    "TupleWrapper",
    "Var",
    "bind",
    "const",
]
