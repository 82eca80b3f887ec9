"""``tvm.te``: TVM's tensor-expression language, which relaykit does not have.

The module imports, so scripts that ``from tvm import te`` load; using any of
its names raises :class:`~relaykit.errors.UnsupportedFeatureError` saying what
to use instead. relaykit's operators are NumPy kernels, registered per operator
(``tvm.ir.register_op_attr(name, "FCompute", fn)``), and shapes are integers.

>>> from relaykit import te
>>> te.placeholder((3,))
Traceback (most recent call last):
...
relaykit.errors.UnsupportedFeatureError: relaykit has no tvm.te (tvm.te.placeholder was used): ...
"""

from __future__ import annotations

from typing import Any, NoReturn

from relaykit.errors import UnsupportedFeatureError
from relaykit.ir.symbolic import SizeVar, Var

__all__ = ["size_var", "var"]

INSTEAD = (
    "relaykit has no tensor expressions or schedules; operators run NumPy kernels "
    "(register one with tvm.ir.register_op_attr(op_name, 'FCompute', fn)), shapes are "
    "integers, and a symbolic dimension (te.var / te.size_var) has no equivalent yet"
)


def var(name: str = "tindex", dtype: str = "int32", span: Any = None) -> Var:
    """A symbolic scalar; a ``TensorType`` dimension made of one raises (static shapes)."""
    return Var(name, dtype, span)


def size_var(name: str = "size", dtype: str = "int32", span: Any = None) -> SizeVar:
    """A symbolic size; a ``TensorType`` dimension made of one raises (static shapes)."""
    return SizeVar(name, dtype, span)


def __getattr__(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.te", name, INSTEAD)
