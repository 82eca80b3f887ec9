"""Elementwise and broadcasting operators: arithmetic, math, trigonometric, comparison,
logic and bitwise operators (one table, :data:`ELEMENTWISE`), ``cast``, ``reinterpret``,
``clip``, ``where`` and the tensor initialisers (``zeros``, ``full``...).

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
from typing import Any, NamedTuple

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, const
from relaykit.ir.op import default_registry
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
from .define import (
    Kernel,
    OpPattern,
    TypeRelation,
    TypeRelError,
    define_op,
    int_tuple,
    make_call,
    no_default,
)

__all__ = [
    # binary arithmetic
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
    "floor_divide", "floor_mod", "mod", "trunc_divide", "trunc_mod",
    # comparison and logic
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "left_shift", "right_shift", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    # unary
    "negative", "abs", "sign", "round", "floor", "ceil", "trunc",
    "exp", "log", "log2", "log10", "sqrt", "rsqrt", "sigmoid", "erf",
    "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "fast_exp", "fast_tanh", "fast_erf",
    "isnan", "isinf", "isfinite",
    # others
    "clip", "cast", "cast_like", "reinterpret", "where", "copy",
    "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
]  # fmt: skip

_E = OpPattern.ELEMWISE
_B = OpPattern.BROADCAST
_BOOL_OR_INT = frozenset({"bool"}) | INT_DTYPES


# -- the elementwise table ------------------------------------------------------------------------


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.divide(a, b) if a.dtype.kind == "f" else num.trunc_divide(a, b)


def _trunc_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.trunc(a / b) if a.dtype.kind == "f" else num.trunc_divide(a, b)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.power(a, b)
    return np.power(a.astype(np.float64), b.astype(np.float64))


def _floor_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.floor(a / b) if a.dtype.kind == "f" else np.floor_divide(a, b)


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
_INT_UNARY = make_unary_rel(_BOOL_OR_INT, "integer or bool")
_INT_REL = make_broadcast_rel(allowed=INT_DTYPES, kind="integer")
_LOGIC_REL = make_broadcast_rel(allowed=_BOOL_OR_INT, kind="bool or integer")
_CMP_REL = make_broadcast_rel(out_dtype="bool")
_BITWISE_REL = make_broadcast_rel(allowed=_BOOL_OR_INT, kind="integer or bool")


class Elementwise(NamedTuple):
    """One row of :data:`ELEMENTWISE`: an attribute-free elementwise operator."""

    arity: int  #: 1 (ELEMWISE pattern) or 2 (broadcasting, BROADCAST pattern)
    fn: Callable[..., Any]  #: the NumPy function of the inputs
    rel: TypeRelation
    out: str  #: the output dtype, "" for the first input's
    doc: str


def _un(fn: Callable[..., Any], rel: TypeRelation, doc: str, out: str = "") -> Elementwise:
    return Elementwise(1, fn, rel, out, doc)


def _bin(fn: Callable[..., Any], rel: TypeRelation, doc: str, out: str = "") -> Elementwise:
    return Elementwise(2, fn, rel, out, doc)


#: Every attribute-free elementwise operator: name -> its row. Binary ones broadcast.
ELEMENTWISE: dict[str, Elementwise] = {
    # binary arithmetic
    "add": _bin(np.add, broadcast_rel, "Elementwise ``lhs + rhs`` with broadcasting."),
    "subtract": _bin(np.subtract, broadcast_rel, "Elementwise ``lhs - rhs``."),
    "multiply": _bin(np.multiply, broadcast_rel, "Elementwise ``lhs * rhs``."),
    "divide": _bin(_divide, broadcast_rel, "Elementwise ``lhs / rhs`` (integers round to 0)."),
    "power": _bin(_power, broadcast_rel, "Elementwise ``lhs ** rhs``."),
    "maximum": _bin(np.maximum, broadcast_rel, "Elementwise maximum."),
    "minimum": _bin(np.minimum, broadcast_rel, "Elementwise minimum."),
    "floor_divide": _bin(_floor_divide, broadcast_rel, "Elementwise ``floor(lhs / rhs)``."),
    "floor_mod": _bin(np.mod, broadcast_rel, "Remainder with the sign of ``rhs``."),
    "mod": _bin(num.trunc_mod, broadcast_rel, "Remainder with the sign of ``lhs`` (C ``%``)."),
    "trunc_divide": _bin(_trunc_divide, broadcast_rel, "Elementwise ``trunc(lhs / rhs)``."),
    "trunc_mod": _bin(num.trunc_mod, broadcast_rel, "Remainder of ``trunc_divide``."),
    # comparison and logic
    "equal": _bin(np.equal, _CMP_REL, "Elementwise ``lhs == rhs`` (bool result).", out="bool"),
    "not_equal": _bin(np.not_equal, _CMP_REL, "Elementwise ``lhs != rhs``.", out="bool"),
    "less": _bin(np.less, _CMP_REL, "Elementwise ``lhs < rhs``.", out="bool"),
    "less_equal": _bin(np.less_equal, _CMP_REL, "Elementwise ``lhs <= rhs``.", out="bool"),
    "greater": _bin(np.greater, _CMP_REL, "Elementwise ``lhs > rhs``.", out="bool"),
    "greater_equal": _bin(np.greater_equal, _CMP_REL, "Elementwise ``lhs >= rhs``.", out="bool"),
    "logical_and": _bin(np.logical_and, _LOGIC_REL, "Elementwise logical and."),
    "logical_or": _bin(np.logical_or, _LOGIC_REL, "Elementwise logical or."),
    "logical_xor": _bin(np.logical_xor, _LOGIC_REL, "Elementwise logical xor."),
    "logical_not": _un(np.logical_not, _LOGIC, "Elementwise logical not."),
    # bitwise
    "left_shift": _bin(np.left_shift, _INT_REL, "Elementwise ``lhs << rhs`` (integers)."),
    "right_shift": _bin(np.right_shift, _INT_REL, "Elementwise ``lhs >> rhs`` (integers)."),
    "bitwise_and": _bin(np.bitwise_and, _BITWISE_REL, "Elementwise ``lhs & rhs``."),
    "bitwise_or": _bin(np.bitwise_or, _BITWISE_REL, "Elementwise ``lhs | rhs``."),
    "bitwise_xor": _bin(np.bitwise_xor, _BITWISE_REL, "Elementwise ``lhs ^ rhs``."),
    "bitwise_not": _un(np.invert, _INT_UNARY, "Elementwise ``~data``."),
    # unary: sign and rounding
    "negative": _un(np.negative, _ANY, "Elementwise ``-data``."),
    "abs": _un(np.abs, _ANY, "Elementwise absolute value."),
    "sign": _un(np.sign, _ANY, "Elementwise sign (-1, 0 or 1)."),
    "round": _un(num.round_half_away, _ANY, "Round to nearest, halves away from zero."),
    "floor": _un(np.floor, _ANY, "Elementwise floor."),
    "ceil": _un(np.ceil, _ANY, "Elementwise ceiling."),
    "trunc": _un(np.trunc, _ANY, "Round toward zero."),
    # unary math (floating point)
    "exp": _un(np.exp, _FLOAT, "Elementwise ``e ** data``."),
    "log": _un(np.log, _FLOAT, "Elementwise natural logarithm."),
    "log2": _un(np.log2, _FLOAT, "Elementwise base-2 logarithm."),
    "log10": _un(np.log10, _FLOAT, "Elementwise base-10 logarithm."),
    "sqrt": _un(np.sqrt, _FLOAT, "Elementwise square root."),
    "rsqrt": _un(_rsqrt, _FLOAT, "Elementwise ``1 / sqrt(data)``."),
    "sigmoid": _un(_sigmoid, _FLOAT, "Elementwise ``1 / (1 + exp(-data))``."),
    "erf": _un(_erf, _FLOAT, "Elementwise Gauss error function."),
    # trigonometric and hyperbolic
    "sin": _un(np.sin, _FLOAT, "Elementwise sine."),
    "cos": _un(np.cos, _FLOAT, "Elementwise cosine."),
    "tan": _un(np.tan, _FLOAT, "Elementwise tangent."),
    "asin": _un(np.arcsin, _FLOAT, "Elementwise arc sine."),
    "acos": _un(np.arccos, _FLOAT, "Elementwise arc cosine."),
    "atan": _un(np.arctan, _FLOAT, "Elementwise arc tangent."),
    "sinh": _un(np.sinh, _FLOAT, "Elementwise hyperbolic sine."),
    "cosh": _un(np.cosh, _FLOAT, "Elementwise hyperbolic cosine."),
    "tanh": _un(np.tanh, _FLOAT, "Elementwise hyperbolic tangent."),
    "asinh": _un(np.arcsinh, _FLOAT, "Elementwise inverse hyperbolic sine."),
    "acosh": _un(np.arccosh, _FLOAT, "Elementwise inverse hyperbolic cosine."),
    "atanh": _un(np.arctanh, _FLOAT, "Elementwise inverse hyperbolic tangent."),
    # FastMath's forms (TVM approximates them; relaykit computes them exactly)
    "fast_exp": _un(np.exp, _FLOAT, "``exp``, as FastMath writes it."),
    "fast_tanh": _un(np.tanh, _FLOAT, "``tanh``, as FastMath writes it."),
    "fast_erf": _un(_erf, _FLOAT, "``erf``, as FastMath writes it."),
    # predicates
    "isnan": _un(np.isnan, _PREDICATE, "Elementwise ``data != data``.", out="bool"),
    "isinf": _un(np.isinf, _PREDICATE, "Elementwise test for infinity.", out="bool"),
    "isfinite": _un(np.isfinite, _PREDICATE, "Elementwise test for finite values.", out="bool"),
    # copies and fills
    "copy": _un(np.copy, _ANY, "A copy of ``data``."),
    "zeros_like": _un(np.zeros_like, _ANY, "Zeros of the shape and dtype of ``data``."),
    "ones_like": _un(np.ones_like, _ANY, "Ones of the shape and dtype of ``data``."),
}  # fmt: skip


def _kernel(row: Elementwise) -> Kernel:
    fn, out = row.fn, row.out
    if row.arity == 1:

        def unary(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
            x = inputs[0]
            with np.errstate(all="ignore"):
                return num.as_out(fn(x), out or x.dtype)

        return unary

    def binary(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        a, b = inputs
        with np.errstate(all="ignore"):
            return num.as_out(fn(a, b), out or a.dtype)

    return binary


#: TVM's support levels of the elementwise operators: 1 for the basic arithmetic and
#: math, 3 for sign and rounding, 4 for the other binary operators; unset ones are 10.
SUPPORT_LEVELS: dict[str, int] = {
    **dict.fromkeys(
        ("add", "subtract", "multiply", "divide", "exp", "log", "log2", "log10", "sqrt",
         "rsqrt", "sigmoid", "tanh", "erf", "sin", "cos", "tan", "asin", "acos", "atan",
         "sinh", "cosh", "asinh", "acosh", "atanh", "fast_exp", "fast_tanh", "fast_erf"),
        1,
    ),
    **dict.fromkeys(
        ("negative", "abs", "sign", "round", "floor", "ceil", "trunc", "copy", "zeros_like",
         "ones_like"),
        3,
    ),
    **dict.fromkeys(
        ("power", "maximum", "minimum", "floor_divide", "floor_mod", "mod", "trunc_divide",
         "trunc_mod", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
         "logical_and", "logical_or", "logical_xor", "logical_not", "left_shift",
         "right_shift", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "isnan",
         "isinf", "isfinite"),
        4,
    ),
}  # fmt: skip

for _name, _row in ELEMENTWISE.items():
    define_op(
        _name,
        num_inputs=_row.arity,
        type_rel=_row.rel,
        compute=_kernel(_row),
        pattern=_E if _row.arity == 1 else _B,
        doc=_row.doc,
    )
    if _name in SUPPORT_LEVELS:
        default_registry.get(_name).set_support_level(SUPPORT_LEVELS[_name])


def _ctor(name: str) -> Callable[..., Call]:
    """The constructor of the elementwise op ``name``, with TVM's parameter names."""
    row = ELEMENTWISE[name]
    if row.arity == 1:

        def unary(data: Expr) -> Call:
            return make_call(name, [data])

        fn: Callable[..., Call] = unary
    else:

        def binary(lhs: Expr, rhs: Expr) -> Call:
            return make_call(name, [lhs, rhs])

        fn = binary
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = row.doc
    return fn


add = _ctor("add")
subtract = _ctor("subtract")
multiply = _ctor("multiply")
divide = _ctor("divide")
power = _ctor("power")
maximum = _ctor("maximum")
minimum = _ctor("minimum")
floor_divide = _ctor("floor_divide")
floor_mod = _ctor("floor_mod")
mod = _ctor("mod")
trunc_divide = _ctor("trunc_divide")
trunc_mod = _ctor("trunc_mod")
equal = _ctor("equal")
not_equal = _ctor("not_equal")
less = _ctor("less")
less_equal = _ctor("less_equal")
greater = _ctor("greater")
greater_equal = _ctor("greater_equal")
logical_and = _ctor("logical_and")
logical_or = _ctor("logical_or")
logical_xor = _ctor("logical_xor")
logical_not = _ctor("logical_not")
left_shift = _ctor("left_shift")
right_shift = _ctor("right_shift")
bitwise_and = _ctor("bitwise_and")
bitwise_or = _ctor("bitwise_or")
bitwise_xor = _ctor("bitwise_xor")
bitwise_not = _ctor("bitwise_not")
negative = _ctor("negative")
abs = _ctor("abs")
sign = _ctor("sign")
round = _ctor("round")
floor = _ctor("floor")
ceil = _ctor("ceil")
trunc = _ctor("trunc")
exp = _ctor("exp")
log = _ctor("log")
log2 = _ctor("log2")
log10 = _ctor("log10")
sqrt = _ctor("sqrt")
rsqrt = _ctor("rsqrt")
sigmoid = _ctor("sigmoid")
erf = _ctor("erf")
sin = _ctor("sin")
cos = _ctor("cos")
tan = _ctor("tan")
asin = _ctor("asin")
acos = _ctor("acos")
atan = _ctor("atan")
sinh = _ctor("sinh")
cosh = _ctor("cosh")
tanh = _ctor("tanh")
asinh = _ctor("asinh")
acosh = _ctor("acosh")
atanh = _ctor("atanh")
fast_exp = _ctor("fast_exp")
fast_tanh = _ctor("fast_tanh")
fast_erf = _ctor("fast_erf")
isnan = _ctor("isnan")
isinf = _ctor("isinf")
isfinite = _ctor("isfinite")
copy = _ctor("copy")
zeros_like = _ctor("zeros_like")
ones_like = _ctor("ones_like")


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
    attrs={"a_min": no_default(), "a_max": no_default()},
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
    attrs={"dtype": no_default("")},
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


def _cast_like_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    t = tensor_arg(arg_types, 0, "data")
    like = tensor_arg(arg_types, 1, "dtype_like")
    return TensorType(t.shape, like.dtype)


define_op(
    "cast_like",
    num_inputs=2,
    type_rel=_cast_like_rel,
    compute=lambda inputs, attrs: num.as_out(inputs[0], inputs[1].dtype),
    pattern=_E,
    doc="Convert to the dtype of a second tensor.",
)


def cast_like(data: Expr, dtype_like: Expr) -> Call:
    """``data`` converted to the dtype of ``dtype_like`` (its shape is not used).

    >>> from relaykit import relay
    >>> cast_like(relay.var("x", shape=(3,)), relay.var("y", dtype="int8")).op.name
    'cast_like'
    """
    return make_call("cast_like", [data, dtype_like])


def _where_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    cond = tensor_arg(arg_types, 0, "condition")
    x = tensor_arg(arg_types, 1, "x")
    y = tensor_arg(arg_types, 2, "y")
    if x.dtype != y.dtype:
        raise TypeRelError(f"x and y must have the same dtype, got {x} and {y}")
    # as TVM, a condition of any dtype is true where it is nonzero
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
    """Elements of ``x`` where ``condition`` is true (nonzero, for a non-bool condition),
    else of ``y`` (all three broadcast).

    >>> from relaykit import relay
    >>> c, a = relay.var("c", shape=(3,), dtype="bool"), relay.var("a", shape=(3,))
    >>> where(c, a, a).op.name
    'where'
    """
    return make_call("where", [condition, x, y])


# -- reinterpret ----------------------------------------------------------------------------------


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
        attrs={"shape": no_default(), "dtype": ""},
        attrs_type_key="relay.attrs.InitOpAttrs",
        type_rel=_init_rel,
        compute=_init_kernel(_value),
        pattern=_E,
        doc=f"A tensor filled with {_value}.",
    )


def zeros(shape: Any, dtype: Any) -> Call:
    """A tensor of ``shape`` filled with zeros.

    >>> zeros((2, 3), "float32").attrs.shape
    [2, 3]
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
    attrs={"shape": no_default(), "dtype": ""},
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


del _name, _row, _value
