"""More elementwise operators: inverse trigonometric and hyperbolic functions, and
the bitwise operators on integers (as TVM's ``relay.tan``, ``relay.bitwise_and``...).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(3,))
>>> tan(x).op.name
'tan'
>>> a = relay.var("a", shape=(2,), dtype="int32")
>>> bitwise_xor(a, a).op.name
'bitwise_xor'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type, check_dtype

from . import _numeric as num
from ._relations import FLOAT_DTYPES, INT_DTYPES, make_broadcast_rel, make_unary_rel, tensor_arg
from .define import OpPattern, TypeRelError, define_op, make_call

__all__ = [
    "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "reinterpret",
]  # fmt: skip

_FLOAT = make_unary_rel(FLOAT_DTYPES, "floating-point (cast integers with relay.cast first)")
_INT_UNARY = make_unary_rel(INT_DTYPES | {"bool"}, "integer or bool")
_INT_BINARY = make_broadcast_rel(allowed=INT_DTYPES | frozenset({"bool"}), kind="integer or bool")


def _unary(fn: Callable[[np.ndarray], Any]) -> Callable:
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        with np.errstate(all="ignore"):
            return num.as_out(fn(inputs[0]), inputs[0].dtype)

    return compute


def _binary(fn: Callable[[np.ndarray, np.ndarray], Any]) -> Callable:
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        return num.as_out(fn(inputs[0], inputs[1]), inputs[0].dtype)

    return compute


_FLOAT_UNARY = {
    "tan": (np.tan, "Elementwise tangent."),
    "asin": (np.arcsin, "Elementwise arc sine."),
    "acos": (np.arccos, "Elementwise arc cosine."),
    "atan": (np.arctan, "Elementwise arc tangent."),
    "sinh": (np.sinh, "Elementwise hyperbolic sine."),
    "cosh": (np.cosh, "Elementwise hyperbolic cosine."),
    "asinh": (np.arcsinh, "Elementwise inverse hyperbolic sine."),
    "acosh": (np.arccosh, "Elementwise inverse hyperbolic cosine."),
    "atanh": (np.arctanh, "Elementwise inverse hyperbolic tangent."),
}
for _name, (_fn, _doc) in _FLOAT_UNARY.items():
    define_op(
        _name,
        num_inputs=1,
        type_rel=_FLOAT,
        compute=_unary(_fn),
        pattern=OpPattern.ELEMWISE,
        doc=_doc,
    )

_BITWISE = {
    "bitwise_and": (np.bitwise_and, "Elementwise ``lhs & rhs``."),
    "bitwise_or": (np.bitwise_or, "Elementwise ``lhs | rhs``."),
    "bitwise_xor": (np.bitwise_xor, "Elementwise ``lhs ^ rhs``."),
}
for _name, (_ufunc2, _doc) in _BITWISE.items():
    define_op(
        _name,
        num_inputs=2,
        type_rel=_INT_BINARY,
        compute=_binary(_ufunc2),
        pattern=OpPattern.BROADCAST,
        doc=_doc,
    )

define_op(
    "bitwise_not",
    num_inputs=1,
    type_rel=_INT_UNARY,
    compute=_unary(np.invert),
    pattern=OpPattern.ELEMWISE,
    doc="Elementwise ``~data``.",
)


def _unary_ctor(name: str) -> Callable[[Expr], Call]:
    def ctor(data: Expr) -> Call:
        return make_call(name, [data])

    ctor.__name__ = ctor.__qualname__ = name
    ctor.__doc__ = (_FLOAT_UNARY.get(name) or ("Elementwise ``~data``.",))[-1]
    return ctor


def _binary_ctor(name: str) -> Callable[[Expr, Expr], Call]:
    def ctor(lhs: Expr, rhs: Expr) -> Call:
        return make_call(name, [lhs, rhs])

    ctor.__name__ = ctor.__qualname__ = name
    ctor.__doc__ = _BITWISE[name][1]
    return ctor


tan = _unary_ctor("tan")
asin = _unary_ctor("asin")
acos = _unary_ctor("acos")
atan = _unary_ctor("atan")
sinh = _unary_ctor("sinh")
cosh = _unary_ctor("cosh")
asinh = _unary_ctor("asinh")
acosh = _unary_ctor("acosh")
atanh = _unary_ctor("atanh")
bitwise_not = _unary_ctor("bitwise_not")
bitwise_and = _binary_ctor("bitwise_and")
bitwise_or = _binary_ctor("bitwise_or")
bitwise_xor = _binary_ctor("bitwise_xor")


def _reinterpret_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    target = check_dtype(attrs.dtype)
    if np.dtype(target).itemsize != np.dtype(data.dtype).itemsize:
        raise TypeRelError(f"cannot reinterpret {data.dtype} as {target}: their bit widths differ")
    return TensorType(data.shape, target)


define_op(
    "reinterpret",
    num_inputs=1,
    attrs={"dtype": ""},
    attrs_type_key="relay.attrs.CastAttrs",
    type_rel=_reinterpret_rel,
    compute=lambda ins, attrs: (
        np.ascontiguousarray(ins[0]).view(check_dtype(attrs.dtype)).reshape(ins[0].shape)
    ),
    pattern=OpPattern.ELEMWISE,
    doc="The same bits read as another dtype of the same width.",
)


def reinterpret(data: Expr, dtype: str) -> Call:
    """``data``'s bits read as ``dtype`` (same bit width), as TVM's ``relay.reinterpret``."""
    return make_call("reinterpret", [data], dtype=check_dtype(dtype))


del _name, _fn, _ufunc2, _doc
