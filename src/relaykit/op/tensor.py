"""Elementwise and broadcasting operators: arithmetic, math, comparison, logic,
``cast``, ``clip``, ``where`` and the tensor initialisers (``zeros``, ``full``...).

Binary operators broadcast like NumPy and require both operands to have the
same dtype; comparisons return ``bool``.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 3))
>>> add(x, relay.const(1.0)).op.name
'add'
>>> cast(x, "int32").attrs.dtype
'int32'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, const
from relaykit.ir.types import TensorType, Type, check_dtype

from . import _numeric as num
from ._relations import (
    FLOAT_DTYPES,
    INT_DTYPES,
    broadcast_rel,
    broadcast_shape,
    make_broadcast_rel,
    make_unary_rel,
    resolve_dtype,
    static_value,
    tensor_arg,
)
from .define import OpPattern, TypeRelError, define_op, int_tuple, make_call

__all__ = [
    # binary arithmetic
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
    "floor_divide", "floor_mod", "mod",
    # comparison and logic
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "left_shift", "right_shift",
    # unary
    "negative", "abs", "sign", "round", "floor", "ceil", "trunc",
    "exp", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos",
    "isnan", "isinf", "isfinite",
    # others
    "clip", "cast", "where", "copy",
    "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
]  # fmt: skip

_E = OpPattern.ELEMWISE
_B = OpPattern.BROADCAST
_BOOL_OR_INT = frozenset({"bool"}) | INT_DTYPES


def _ctor(name: str, arity: int, doc: str) -> Callable[..., Call]:
    """A constructor ``fn(args...)`` for an attribute-free op with TVM's parameter names."""
    if arity == 1:

        def unary(data: Expr) -> Call:
            return make_call(name, [data])

        fn: Callable[..., Call] = unary
    else:

        def binary(lhs: Expr, rhs: Expr) -> Call:
            return make_call(name, [lhs, rhs])

        fn = binary
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


# -- binary broadcasting ops ----------------------------------------------------------------------


def _binary_kernel(fn: Callable[[np.ndarray, np.ndarray], Any], out: str = "") -> Callable:
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        a, b = inputs
        with np.errstate(all="ignore"):
            return num.as_out(fn(a, b), out or a.dtype)

    return compute


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.divide(a, b) if a.dtype.kind == "f" else num.trunc_divide(a, b)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.power(a, b)
    return np.power(a.astype(np.float64), b.astype(np.float64))


def _floor_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.floor(a / b) if a.dtype.kind == "f" else np.floor_divide(a, b)


_INT_REL = make_broadcast_rel(allowed=INT_DTYPES, kind="integer")
_LOGIC_REL = make_broadcast_rel(allowed=_BOOL_OR_INT, kind="bool or integer")
_CMP_REL = make_broadcast_rel(out_dtype="bool")

_BINARY: dict[str, tuple[Callable, Any, str, str]] = {
    # name: (numpy function, relation, output dtype override, doc)
    "add": (np.add, broadcast_rel, "", "Elementwise ``lhs + rhs`` with broadcasting."),
    "subtract": (np.subtract, broadcast_rel, "", "Elementwise ``lhs - rhs``."),
    "multiply": (np.multiply, broadcast_rel, "", "Elementwise ``lhs * rhs``."),
    "divide": (_divide, broadcast_rel, "", "Elementwise ``lhs / rhs`` (integers round to 0)."),
    "power": (_power, broadcast_rel, "", "Elementwise ``lhs ** rhs``."),
    "maximum": (np.maximum, broadcast_rel, "", "Elementwise maximum."),
    "minimum": (np.minimum, broadcast_rel, "", "Elementwise minimum."),
    "floor_divide": (_floor_divide, broadcast_rel, "", "Elementwise ``floor(lhs / rhs)``."),
    "floor_mod": (np.mod, broadcast_rel, "", "Remainder with the sign of ``rhs``."),
    "mod": (num.trunc_mod, broadcast_rel, "", "Remainder with the sign of ``lhs`` (C ``%``)."),
    "equal": (np.equal, _CMP_REL, "bool", "Elementwise ``lhs == rhs`` (bool result)."),
    "not_equal": (np.not_equal, _CMP_REL, "bool", "Elementwise ``lhs != rhs``."),
    "less": (np.less, _CMP_REL, "bool", "Elementwise ``lhs < rhs``."),
    "less_equal": (np.less_equal, _CMP_REL, "bool", "Elementwise ``lhs <= rhs``."),
    "greater": (np.greater, _CMP_REL, "bool", "Elementwise ``lhs > rhs``."),
    "greater_equal": (np.greater_equal, _CMP_REL, "bool", "Elementwise ``lhs >= rhs``."),
    "logical_and": (np.logical_and, _LOGIC_REL, "", "Elementwise logical and."),
    "logical_or": (np.logical_or, _LOGIC_REL, "", "Elementwise logical or."),
    "logical_xor": (np.logical_xor, _LOGIC_REL, "", "Elementwise logical xor."),
    "left_shift": (np.left_shift, _INT_REL, "", "Elementwise ``lhs << rhs`` (integers)."),
    "right_shift": (np.right_shift, _INT_REL, "", "Elementwise ``lhs >> rhs`` (integers)."),
}

for _name, (_fn, _rel, _out, _doc) in _BINARY.items():
    define_op(
        _name, num_inputs=2, type_rel=_rel, compute=_binary_kernel(_fn, _out), pattern=_B, doc=_doc
    )

add = _ctor("add", 2, _BINARY["add"][3])
subtract = _ctor("subtract", 2, _BINARY["subtract"][3])
multiply = _ctor("multiply", 2, _BINARY["multiply"][3])
divide = _ctor("divide", 2, _BINARY["divide"][3])
power = _ctor("power", 2, _BINARY["power"][3])
maximum = _ctor("maximum", 2, _BINARY["maximum"][3])
minimum = _ctor("minimum", 2, _BINARY["minimum"][3])
floor_divide = _ctor("floor_divide", 2, _BINARY["floor_divide"][3])
floor_mod = _ctor("floor_mod", 2, _BINARY["floor_mod"][3])
mod = _ctor("mod", 2, _BINARY["mod"][3])
equal = _ctor("equal", 2, _BINARY["equal"][3])
not_equal = _ctor("not_equal", 2, _BINARY["not_equal"][3])
less = _ctor("less", 2, _BINARY["less"][3])
less_equal = _ctor("less_equal", 2, _BINARY["less_equal"][3])
greater = _ctor("greater", 2, _BINARY["greater"][3])
greater_equal = _ctor("greater_equal", 2, _BINARY["greater_equal"][3])
logical_and = _ctor("logical_and", 2, _BINARY["logical_and"][3])
logical_or = _ctor("logical_or", 2, _BINARY["logical_or"][3])
logical_xor = _ctor("logical_xor", 2, _BINARY["logical_xor"][3])
left_shift = _ctor("left_shift", 2, _BINARY["left_shift"][3])
right_shift = _ctor("right_shift", 2, _BINARY["right_shift"][3])


# -- unary elementwise ops ------------------------------------------------------------------------


def _unary_kernel(fn: Callable[[np.ndarray], Any], out: str = "") -> Callable:
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = inputs[0]
        with np.errstate(all="ignore"):
            return num.as_out(fn(x), out or x.dtype)

    return compute


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x)


def _erf(x: np.ndarray) -> np.ndarray:
    return num.erf(x)


_ANY = make_unary_rel()
_FLOAT = make_unary_rel(FLOAT_DTYPES, "floating-point (cast integers with relay.cast first)")
_LOGIC = make_unary_rel(_BOOL_OR_INT, "bool or integer")
_PREDICATE = make_unary_rel(FLOAT_DTYPES, "floating-point", out_dtype="bool")

_UNARY: dict[str, tuple[Callable, Any, str, str]] = {
    "negative": (np.negative, _ANY, "", "Elementwise ``-data``."),
    "abs": (np.abs, _ANY, "", "Elementwise absolute value."),
    "sign": (np.sign, _ANY, "", "Elementwise sign (-1, 0 or 1)."),
    "round": (num.round_half_away, _ANY, "", "Round to nearest, halves away from zero."),
    "floor": (np.floor, _ANY, "", "Elementwise floor."),
    "ceil": (np.ceil, _ANY, "", "Elementwise ceiling."),
    "trunc": (np.trunc, _ANY, "", "Round toward zero."),
    "exp": (np.exp, _FLOAT, "", "Elementwise ``e ** data``."),
    "log": (np.log, _FLOAT, "", "Elementwise natural logarithm."),
    "log2": (np.log2, _FLOAT, "", "Elementwise base-2 logarithm."),
    "sqrt": (np.sqrt, _FLOAT, "", "Elementwise square root."),
    "rsqrt": (_rsqrt, _FLOAT, "", "Elementwise ``1 / sqrt(data)``."),
    "tanh": (np.tanh, _FLOAT, "", "Elementwise hyperbolic tangent."),
    "sigmoid": (_sigmoid, _FLOAT, "", "Elementwise ``1 / (1 + exp(-data))``."),
    "erf": (_erf, _FLOAT, "", "Elementwise Gauss error function."),
    "sin": (np.sin, _FLOAT, "", "Elementwise sine."),
    "cos": (np.cos, _FLOAT, "", "Elementwise cosine."),
    "isnan": (np.isnan, _PREDICATE, "bool", "Elementwise ``data != data``."),
    "isinf": (np.isinf, _PREDICATE, "bool", "Elementwise test for infinity."),
    "isfinite": (np.isfinite, _PREDICATE, "bool", "Elementwise test for finite values."),
    "logical_not": (np.logical_not, _LOGIC, "", "Elementwise logical not."),
    "copy": (np.copy, _ANY, "", "A copy of ``data``."),
    "zeros_like": (np.zeros_like, _ANY, "", "Zeros of the shape and dtype of ``data``."),
    "ones_like": (np.ones_like, _ANY, "", "Ones of the shape and dtype of ``data``."),
}

for _name, (_fn, _rel, _out, _doc) in _UNARY.items():
    define_op(
        _name, num_inputs=1, type_rel=_rel, compute=_unary_kernel(_fn, _out), pattern=_E, doc=_doc
    )

negative = _ctor("negative", 1, _UNARY["negative"][3])
abs = _ctor("abs", 1, _UNARY["abs"][3])
sign = _ctor("sign", 1, _UNARY["sign"][3])
round = _ctor("round", 1, _UNARY["round"][3])
floor = _ctor("floor", 1, _UNARY["floor"][3])
ceil = _ctor("ceil", 1, _UNARY["ceil"][3])
trunc = _ctor("trunc", 1, _UNARY["trunc"][3])
exp = _ctor("exp", 1, _UNARY["exp"][3])
log = _ctor("log", 1, _UNARY["log"][3])
log2 = _ctor("log2", 1, _UNARY["log2"][3])
sqrt = _ctor("sqrt", 1, _UNARY["sqrt"][3])
rsqrt = _ctor("rsqrt", 1, _UNARY["rsqrt"][3])
tanh = _ctor("tanh", 1, _UNARY["tanh"][3])
sigmoid = _ctor("sigmoid", 1, _UNARY["sigmoid"][3])
erf = _ctor("erf", 1, _UNARY["erf"][3])
sin = _ctor("sin", 1, _UNARY["sin"][3])
cos = _ctor("cos", 1, _UNARY["cos"][3])
isnan = _ctor("isnan", 1, _UNARY["isnan"][3])
isinf = _ctor("isinf", 1, _UNARY["isinf"][3])
isfinite = _ctor("isfinite", 1, _UNARY["isfinite"][3])
logical_not = _ctor("logical_not", 1, _UNARY["logical_not"][3])
copy = _ctor("copy", 1, _UNARY["copy"][3])
zeros_like = _ctor("zeros_like", 1, _UNARY["zeros_like"][3])
ones_like = _ctor("ones_like", 1, _UNARY["ones_like"][3])


# -- clip, cast, where ----------------------------------------------------------------------------


def _clip_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    t = tensor_arg(arg_types, 0, "data")
    if attrs.a_min is None or attrs.a_max is None:
        raise TypeRelError("clip needs both a_min and a_max")
    if attrs.a_min > attrs.a_max:
        raise TypeRelError(f"clip a_min ({attrs.a_min}) is greater than a_max ({attrs.a_max})")
    return t


def _clip_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    return num.as_out(np.clip(x, attrs.a_min, attrs.a_max), x.dtype)


define_op(
    "clip",
    num_inputs=1,
    attrs={"a_min": None, "a_max": None},
    attrs_type_key="relay.attrs.ClipAttrs",
    type_rel=_clip_rel,
    compute=_clip_kernel,
    pattern=_E,
    doc="Clip values to [a_min, a_max].",
)


def clip(a: Expr, a_min: float, a_max: float) -> Call:
    """Clip the values of ``a`` to ``[a_min, a_max]``.

    >>> from relaykit import relay
    >>> clip(relay.var("x", shape=(3,)), 0.0, 6.0).attrs.a_max
    6.0
    """
    return make_call("clip", [a], a_min=float(a_min), a_max=float(a_max))


def _cast_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    t = tensor_arg(arg_types, 0, "data")
    if attrs.dtype in ("", None):
        raise TypeRelError("cast needs a target dtype")
    return TensorType(t.shape, resolve_dtype(attrs.dtype, t.dtype, "cast dtype"))


define_op(
    "cast",
    num_inputs=1,
    attrs={"dtype": ""},
    attrs_type_key="relay.attrs.CastAttrs",
    type_rel=_cast_rel,
    compute=lambda inputs, attrs: num.as_out(inputs[0], check_dtype(attrs.dtype)),
    pattern=_E,
    doc="Convert to another dtype.",
)


def cast(data: Expr, dtype: Any) -> Call:
    """``data`` converted to ``dtype``.

    >>> from relaykit import relay
    >>> cast(relay.var("x", shape=(3,)), "float16").attrs.dtype
    'float16'
    """
    return make_call("cast", [data], dtype=check_dtype(dtype))


def _where_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    cond = tensor_arg(arg_types, 0, "condition")
    x = tensor_arg(arg_types, 1, "x")
    y = tensor_arg(arg_types, 2, "y")
    if x.dtype != y.dtype:
        raise TypeRelError(f"x and y must have the same dtype, got {x} and {y}")
    if cond.dtype not in _BOOL_OR_INT:
        raise TypeRelError(f"condition must be a bool tensor, got {cond}")
    shape = broadcast_shape(broadcast_shape(cond.shape, x.shape), y.shape)
    return TensorType(shape, x.dtype)


define_op(
    "where",
    num_inputs=3,
    type_rel=_where_rel,
    compute=lambda inputs, attrs: num.as_out(
        np.where(inputs[0], inputs[1], inputs[2]), inputs[1].dtype
    ),
    pattern=_B,
    doc="Select from x where condition holds, else from y.",
)


def where(condition: Expr, x: Expr, y: Expr) -> Call:
    """Elements of ``x`` where ``condition`` is true, else of ``y`` (all three broadcast).

    >>> from relaykit import relay
    >>> c, a = relay.var("c", shape=(3,), dtype="bool"), relay.var("a", shape=(3,))
    >>> where(c, a, a).op.name
    'where'
    """
    return make_call("where", [condition, x, y])


# -- initialisers ---------------------------------------------------------------------------------


def _attr_shape(attrs: Attrs) -> tuple[int, ...]:
    shape = attrs.shape
    if shape is None:
        raise TypeRelError("the shape attribute is missing")
    dims = tuple(shape) if isinstance(shape, tuple) else (shape,)
    if any(not isinstance(d, int) or d < 0 for d in dims):
        raise TypeRelError(f"shape {shape} must contain non-negative integers")
    return dims


def _init_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    if arg_types:
        raise TypeRelError(f"expected no inputs, got {len(arg_types)}")
    return TensorType(_attr_shape(attrs), resolve_dtype(attrs.dtype, "float32", "dtype"))


def _init_kernel(value: int) -> Callable:
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        return np.full(_attr_shape(attrs), value, dtype=check_dtype(attrs.dtype or "float32"))

    return compute


for _name, _value in (("zeros", 0), ("ones", 1)):
    define_op(
        _name,
        num_inputs=0,
        attrs={"shape": None, "dtype": ""},
        attrs_type_key="relay.attrs.InitOpAttrs",
        type_rel=_init_rel,
        compute=_init_kernel(_value),
        pattern=_E,
        doc=f"A tensor filled with {_value}.",
    )


def zeros(shape: Any, dtype: Any) -> Call:
    """A tensor of ``shape`` filled with zeros.

    >>> zeros((2, 3), "float32").attrs.shape
    (2, 3)
    """
    shape = static_value(shape)
    if isinstance(shape, Expr):
        return make_call("dyn.zeros", [shape], dtype=check_dtype(dtype))
    return make_call("zeros", [], shape=int_tuple(shape, "shape"), dtype=check_dtype(dtype))


def ones(shape: Any, dtype: Any) -> Call:
    """A tensor of ``shape`` filled with ones: ``ones((2, 3), "float32")``."""
    shape = static_value(shape)
    if isinstance(shape, Expr):
        return make_call("dyn.ones", [shape], dtype=check_dtype(dtype))
    return make_call("ones", [], shape=int_tuple(shape, "shape"), dtype=check_dtype(dtype))


def _full_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    fill = tensor_arg(arg_types, 0, "fill_value")
    if fill.shape != ():
        raise TypeRelError(f"fill_value must be a scalar, got {fill}")
    return TensorType(_attr_shape(attrs), resolve_dtype(attrs.dtype, fill.dtype, "dtype"))


def _full_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    fill = inputs[0]
    dtype = check_dtype(attrs.dtype) if attrs.dtype else fill.dtype
    return np.full(_attr_shape(attrs), fill, dtype=dtype)


define_op(
    "full",
    num_inputs=1,
    attrs={"shape": None, "dtype": ""},
    attrs_type_key="relay.attrs.InitOpAttrs",
    type_rel=_full_rel,
    compute=_full_kernel,
    pattern=_E,
    doc="A tensor filled with a scalar.",
)


def _as_fill(fill_value: Any, dtype: Any) -> Expr:
    if isinstance(fill_value, Expr):
        return fill_value
    return const(fill_value, dtype or None)


def full(fill_value: Any, shape: Any = (), dtype: Any = "") -> Call:
    """A tensor of ``shape`` filled with the scalar ``fill_value``.

    >>> from relaykit import relay
    >>> full(relay.const(1.5), (2,), "float32").attrs.dtype
    'float32'
    """
    dt = check_dtype(dtype) if dtype else ""
    shape = static_value(shape)
    if isinstance(shape, Expr):
        return make_call("dyn.full", [_as_fill(fill_value, dt), shape], dtype=dt)
    return make_call("full", [_as_fill(fill_value, dt)], shape=int_tuple(shape, "shape"), dtype=dt)


def _full_like_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    fill = tensor_arg(arg_types, 1, "fill_value")
    if fill.shape != ():
        raise TypeRelError(f"fill_value must be a scalar, got {fill}")
    return data


define_op(
    "full_like",
    num_inputs=2,
    type_rel=_full_like_rel,
    compute=lambda inputs, attrs: np.full_like(inputs[0], inputs[1]),
    pattern=_E,
    doc="A tensor like data filled with a scalar.",
)


def full_like(data: Expr, fill_value: Any) -> Call:
    """A tensor of the shape and dtype of ``data`` filled with ``fill_value``."""
    return make_call("full_like", [data, _as_fill(fill_value, "")])


del _name, _fn, _rel, _out, _doc, _value
