"""Dropout: ``nn.dropout``, the identity at inference (``(out, mask)``), with its schema,
type relation, reference kernel and constructors (``dropout``, ``dropout_raw``).

>>> from relaykit import relay
>>> dropout(relay.var("x", shape=(2, 3)), rate=0.2).index
0
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, TupleGetItem, TupleWrapper
from relaykit.ir.types import TupleType, Type
from relaykit.op._relations import tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["dropout", "dropout_raw"]


def dropout_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if not 0.0 <= attrs.rate <= 1.0:
        raise TypeRelError(f"dropout rate must be in [0, 1], got {attrs.rate}")
    return TupleType([data, data])


define_op(
    "nn.dropout",
    num_inputs=1,
    num_outputs=2,
    attrs={"rate": 0.5},
    attrs_type_key="relay.attrs.DropoutAttrs",
    type_rel=dropout_rel,
    compute=lambda ins, attrs: (ins[0].copy(), np.ones_like(ins[0])),
    pattern=OpPattern.OPAQUE,
    doc="Dropout; at inference the identity (out, mask).",
)


def dropout_raw(data: Expr, rate: float = 0.5) -> Call:
    """The ``nn.dropout`` call itself: a 2-tuple (out, mask)."""
    return make_call("nn.dropout", [data], rate=float(rate))


def dropout(data: Expr, rate: float = 0.5) -> TupleGetItem:
    """Dropout: ``dropout_raw(data, rate)[0]``, as TVM (the identity at inference)."""
    return TupleWrapper(dropout_raw(data, rate), 2)[0]
