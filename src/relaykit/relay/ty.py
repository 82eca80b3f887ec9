"""``tvm.relay.ty``: Relay's type classes.

>>> from relaykit.relay import ty
>>> ty.TensorType((1, 2), "float32")
TensorType((1, 2), float32)
"""

from __future__ import annotations

from relaykit.ir.adt import GlobalTypeVar, TypeCall
from relaykit.ir.types import (
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeKind,
    TypeRelation,
    TypeVar,
    scalar_type,
)

__all__ = [
    "GlobalTypeVar",
    "TypeCall",
    "FuncType",
    "IncompleteType",
    "RefType",
    "TensorType",
    "TupleType",
    "Type",
    "TypeKind",
    "TypeRelation",
    "TypeVar",
    "scalar_type",
]
