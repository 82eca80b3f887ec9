"""TVM's ``relay.op._make``: the raw operator constructors, which build the call from
already-formed arguments (an expression of tuple type for ``concatenate``) without the
Python wrappers' conversions.

>>> from relaykit import relay
>>> t = relay.var("t", relay.TupleType([relay.TensorType((2, 3)), relay.TensorType((2, 3))]))
>>> concatenate(t, 1).args[0] is t
True
"""

from __future__ import annotations

from relaykit.ir.expr import Call, Expr

from .define import make_call

__all__ = ["concatenate"]


def concatenate(data: Expr, axis: int) -> Call:
    """``concatenate`` of the tuple-typed expression ``data`` (a Tuple or any expression
    of tuple type) along ``axis``."""
    return make_call("concatenate", [data], axis=int(axis))
