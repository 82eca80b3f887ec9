"""Affine types (TVM's ``tvm.ir.TensorAffineType`` / ``TupleAffineType``): how a tensor
of integers stands for real numbers, ``real = scale * (q - zero_point)``, with ``scale``
and ``zero_point`` Relay expressions (scalars, or vectors along ``axis``).

FakeQuantizationToInteger carries one of these for every value of a region it rewrites.

>>> from relaykit.ir.expr import const
>>> t = TensorAffineType(const(0.5), const(0), "int8", axis=1)
>>> t.dtype, t.axis
('int8', 1)
>>> TupleAffineType([t, t]).types[1] is t
True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .expr import Expr

__all__ = ["AffineType", "TensorAffineType", "TupleAffineType"]


class AffineType:
    """Base of the affine types."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, eq=False)
class TensorAffineType(AffineType):
    """A quantized tensor: integers of ``dtype`` standing for
    ``scale * (q - zero_point)`` (per channel along ``axis`` when the scale is a vector)."""

    scale: Expr
    zero_point: Expr
    dtype: str
    axis: int = -1

    def __init__(self, scale: Expr, zero_point: Expr, dtype: str, axis: int = -1) -> None:
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "zero_point", zero_point)
        object.__setattr__(self, "dtype", str(dtype))
        object.__setattr__(self, "axis", int(axis))


@dataclass(frozen=True, slots=True, eq=False)
class TupleAffineType(AffineType):
    """A tuple of quantized tensors, one affine type per field."""

    types: tuple[TensorAffineType, ...]

    def __init__(self, types: Iterable[TensorAffineType]) -> None:
        object.__setattr__(self, "types", tuple(types))
