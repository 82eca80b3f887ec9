"""``tvm.tir``: the immediate values Relay uses, without TVM's tensor-level IR.

Relay code reads ``tvm.tir.IntImm("int32", 1)`` as a function attribute
(``Primitive=1``) and ``tir.FloatImm`` / ``tir.StringImm`` likewise: those are
real here, as ``int`` / ``float`` / ``str`` subclasses that remember their
dtype, so they compare, hash and print as the plain values. Every other name of
TVM's ``tir`` (loops, buffers, PrimFuncs) raises
:class:`~relaykit.errors.UnsupportedFeatureError`.

>>> one = IntImm("int32", 1)
>>> one == 1, one.dtype, one.value
(True, 'int32', 1)
"""

from __future__ import annotations

from typing import Any, NoReturn

from relaykit.errors import UnsupportedFeatureError

__all__ = ["IntImm", "FloatImm", "SizeVar", "StringImm", "Var"]

INSTEAD = (
    "relaykit has no tensor-level IR (loops, buffers, PrimFuncs); Relay functions and "
    "operators' NumPy kernels are its lowest level"
)


class IntImm(int):
    """An integer with a dtype (``tvm.tir.IntImm(dtype, value)``)."""

    dtype: str

    def __new__(cls, dtype: str, value: int, span: Any = None) -> IntImm:
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

    def __new__(cls, dtype: str, value: float, span: Any = None) -> FloatImm:
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

    def __new__(cls, value: str, span: Any = None) -> StringImm:
        return super().__new__(cls, value)

    @property
    def value(self) -> str:
        return str(self)


class Var:
    """A named symbolic scalar (``tvm.tir.Var(name, dtype)``, made by ``te.var``).

    It exists so scripts that name symbolic dimensions load; relaykit's shapes are
    static, so putting one in a ``TensorType`` raises an ``IRError`` that says so.
    """

    def __init__(self, name: str = "v", dtype: str = "int32", span: Any = None) -> None:
        self.name = str(name)
        self.dtype = str(dtype)

    def __repr__(self) -> str:
        return self.name


class SizeVar(Var):
    """A symbolic non-negative size (``tvm.tir.SizeVar``, made by ``te.size_var``)."""


def __getattr__(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.tir", name, INSTEAD)
