"""``tvm.tir``: the immediate values and symbolic dimensions Relay uses, without TVM's
tensor-level IR.

Relay code reads ``tvm.tir.IntImm("int32", 1)`` as a function attribute
(``Primitive=1``) and ``tir.FloatImm`` / ``tir.StringImm`` likewise: those are
real here, as ``int`` / ``float`` / ``str`` subclasses that remember their
dtype, so they compare, hash and print as the plain values. ``tir.Var``,
``tir.SizeVar``, ``tir.Any``, ``tir.PrimExpr`` and the index arithmetic are the IR's
symbolic dimensions (:mod:`relaykit.ir.symbolic`), re-exported under TVM's names.
Every other name of TVM's ``tir`` (loops, buffers, PrimFuncs) raises
:class:`~relaykit.errors.UnsupportedFeatureError`.

>>> one = IntImm("int32", 1)
>>> one == 1, one.dtype, one.value
(True, 'int32', 1)
"""

from __future__ import annotations

from typing import Any as _Typing
from typing import NoReturn

from relaykit.errors import UnsupportedFeatureError, UsageError
from relaykit.ir.layout import Layout, layout
from relaykit.ir.symbolic import (
    Any,
    Dim,
    PrimExpr,
    SizeVar,
    SymExpr,
    Var,
    add,
    evaluate,
    floordiv,
    floormod,
    indexdiv,
    indexmod,
    is_size,
    is_static,
    mul,
    vars_of,
)

__all__ = [
    "Any",
    "Dim",
    "IntImm",
    "Layout",
    "layout",
    "FloatImm",
    "PrimExpr",
    "SizeVar",
    "StringImm",
    "SymExpr",
    "Var",
    "add",
    "const",
    "evaluate",
    "floordiv",
    "floormod",
    "indexdiv",
    "indexmod",
    "is_size",
    "is_static",
    "mul",
    "vars_of",
]

INSTEAD = (
    "relaykit has no tensor-level IR (loops, buffers, PrimFuncs); Relay functions and "
    "operators' NumPy kernels are its lowest level"
)


class IntImm(int):
    """An integer with a dtype (``tvm.tir.IntImm(dtype, value)``)."""

    dtype: str

    def __new__(cls, dtype: str, value: int, span: _Typing = None) -> IntImm:
        out = super().__new__(cls, value)
        out.dtype = str(dtype)
        return out

    @property
    def value(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        return f"IntImm({self.dtype!r}, {int(self)})"


class FloatImm(float):
    """A float with a dtype (``tvm.tir.FloatImm(dtype, value)``)."""

    dtype: str

    def __new__(cls, dtype: str, value: float, span: _Typing = None) -> FloatImm:
        out = super().__new__(cls, value)
        out.dtype = str(dtype)
        return out

    @property
    def value(self) -> float:
        return float(self)

    def __repr__(self) -> str:
        return f"FloatImm({self.dtype!r}, {float(self)})"


class StringImm(str):
    """A string immediate (``tvm.tir.StringImm(value)``)."""

    def __new__(cls, value: str, span: _Typing = None) -> StringImm:
        return super().__new__(cls, value)

    @property
    def value(self) -> str:
        return str(self)


def const(value: _Typing, dtype: str | None = None, span: _Typing = None) -> IntImm | FloatImm:
    """An immediate of ``value`` (``tvm.tir.const``): an :class:`IntImm` for a bool or an
    integer (``"bool"`` / ``"int32"`` unless ``dtype`` says), a :class:`FloatImm` for a
    float (``"float32"`` unless ``dtype`` says); a float ``dtype`` makes a float.

    >>> const(10, "int64"), const(2.5)
    (IntImm('int64', 10), FloatImm('float32', 2.5))
    """
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else ""
        dtype = dtype or "float32"
    dtype = str(dtype)
    if dtype.startswith(("float", "bfloat")):
        return FloatImm(dtype, float(value))
    if isinstance(value, float) and not value.is_integer():
        raise UsageError(
            f"tvm.tir.const({value!r}, {dtype!r}): a fraction cannot be an {dtype} "
            "immediate; give a float dtype or a whole number"
        )
    return IntImm(dtype, int(value))


def __getattr__(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.tir", name, INSTEAD)
