"""Gradients (``FPrimalGradient``) of selection, shape, comparison and batched operators:
``clip``, ``cast_like``, ``take``, ``gather_nd``, ``strided_slice``, ``stack``, ``where``,
``max``/``min``, ``variance``, ``nn.batch_matmul``, the comparisons, the shape-only
operators (``shape_of``, ``dyn.reshape``, ``contrib_reverse_reshape``) and the
constant makers (``zeros``, ``ones``, ``arange``, ``one_hot``...).

The gradient of an operator that picks elements of its data (``take``, ``gather_nd``,
``strided_slice``) is found by tracing positions: the same call applied to the flat
positions ``0 .. size-1`` of the data (laid out in its shape) tells, for each output
element, which input element it came from, and the output gradient is scatter-added
back there. One rule then covers every mode, axis and index form of those operators.

>>> from relaykit.ir import get_op
>>> get_op("take").get_attr("FPrimalGradient") is not None
True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relaykit.errors import UnsupportedFeatureError
from relaykit.ir.expr import Call, Constant, Expr, Tuple, TupleGetItem
from relaykit.ir.types import TensorType

from .indexing import scatter_elements
from .nn.linear import batch_matmul
from .op import register_gradient
from .reduce import sum as _sum
from .shape_like import broadcast_to_like, collapse_sum_like, reshape_like
from .tensor import (
    cast_like,
    divide,
    equal,
    greater,
    less,
    logical_or,
    multiply,
    negative,
    subtract,
    where,
    zeros_like,
)
from .transform import reshape, split, squeeze, transpose

__all__ = ["TRANSFORM_GRADIENTS"]

Grad = Callable[[Call, Expr], list[Expr]]
TRANSFORM_GRADIENTS: dict[str, Grad] = {}


def _grad(*names: str) -> Callable[[Grad], Grad]:
    def deco(fn: Grad) -> Grad:
        for name in names:
            TRANSFORM_GRADIENTS[name] = fn
            register_gradient(name, fn)
        return fn

    return deco


def _ttype(e: Expr) -> TensorType:
    t = e.checked_type
    assert isinstance(t, TensorType)
    return t


def _static_shape(e: Expr, what: str) -> tuple[int, ...]:
    t = _ttype(e)
    if not t.is_static:
        raise UnsupportedFeatureError(
            f"gradient of {what}: the input {t} has dynamic dimensions; the gradient of a "
            "selection needs static input shapes"
        )
    return tuple(int(d) for d in t.shape)


# -- inputs that only shape the result, and constant makers ---------------------------------------


def _no_gradient(call: Call, g: Expr) -> list[Expr]:
    """Every input gets a zero gradient (the output is constant in them, or boolean)."""
    return [zeros_like(a) for a in call.args]


_grad(
    "zeros",
    "ones",
    "arange",
    "dyn.zeros",
    "dyn.ones",
    "shape_of",
    "ndarray_size",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "argmax",
    "argmin",
    "floor",
    "ceil",
    "round",
    "trunc",
    "sign",
)(_no_gradient)


@_grad("dyn.reshape", "contrib_reverse_reshape")
def _reshape_grad(call: Call, g: Expr) -> list[Expr]:
    x, *shape_inputs = call.args
    return [reshape_like(g, x), *(zeros_like(a) for a in shape_inputs)]


@_grad("dyn.arange")
def _arange_grad(call: Call, g: Expr) -> list[Expr]:
    """``out[i] = start + i * step``: ``d start = sum(g)``, ``d step = sum(g * i)``; the
    stop only decides the length."""
    start, stop, step = call.args
    index = divide(subtract(call, start), step)
    return [_sum(g), zeros_like(stop), _sum(multiply(g, index))]


@_grad("cast_like")
def _cast_like_grad(call: Call, g: Expr) -> list[Expr]:
    x, like = call.args
    return [cast_like(g, x), zeros_like(like)]


@_grad("clip")
def _clip_grad(call: Call, g: Expr) -> list[Expr]:
    (x,) = call.args
    dtype = _ttype(x).dtype
    lo = Constant(np.array(call.attrs.a_min, dtype=dtype))
    hi = Constant(np.array(call.attrs.a_max, dtype=dtype))
    outside = logical_or(less(x, lo), greater(x, hi))
    return [where(outside, zeros_like(g), g)]


@_grad("one_hot")
def _one_hot_grad(call: Call, g: Expr) -> list[Expr]:
    indices, on_value, off_value = call.args
    ones = Constant(np.array(1, dtype=_ttype(call).dtype))
    zeros = Constant(np.array(0, dtype=_ttype(call).dtype))
    mask = Call(call.op, [indices, ones, zeros], call.attrs)
    on_grad = _sum(multiply(g, mask))
    off_grad = _sum(multiply(g, subtract(ones, mask)))
    return [
        zeros_like(indices),
        cast_like(reshape_like(on_grad, on_value), on_value),
        cast_like(reshape_like(off_grad, off_value), off_value),
    ]


# -- selections: the output gradient scatter-added back to where each element came from -----------


def _scatter_back(call: Call, g: Expr, what: str) -> Expr:
    """The gradient of ``call``'s first input: ``g`` added at the positions that the
    same call picks from the flat positions of that input."""
    x = call.args[0]
    shape = _static_shape(x, what)
    size = int(np.prod(shape, dtype=np.int64))
    positions = Constant(np.arange(size, dtype=np.int64).reshape(shape))
    picked = Call(call.op, [positions, *call.args[1:]], call.attrs)
    dtype = _ttype(x).dtype
    flat = scatter_elements(
        Constant(np.zeros((size,), dtype=dtype)),
        reshape(picked, [-1]),
        reshape(g, [-1]),
        axis=0,
        reduction="add",
    )
    return reshape(flat, list(shape))


@_grad("take")
def _take_grad(call: Call, g: Expr) -> list[Expr]:
    return [_scatter_back(call, g, "take"), zeros_like(call.args[1])]


@_grad("gather_nd")
def _gather_nd_grad(call: Call, g: Expr) -> list[Expr]:
    return [_scatter_back(call, g, "gather_nd"), zeros_like(call.args[1])]


@_grad("gather")
def _gather_grad(call: Call, g: Expr) -> list[Expr]:
    return [_scatter_back(call, g, "gather"), zeros_like(call.args[1])]


@_grad("strided_slice")
def _strided_slice_grad(call: Call, g: Expr) -> list[Expr]:
    return [_scatter_back(call, g, "strided_slice")]


@_grad("stack")
def _stack_grad(call: Call, g: Expr) -> list[Expr]:
    fields = call.args[0].checked_type.fields  # type: ignore[attr-defined]
    axis = int(call.attrs.axis) % _ttype(call).ndim
    n = len(fields)
    parts = split(g, n, axis=axis).astuple() if n > 1 else Tuple([g])
    return [Tuple([squeeze(TupleGetItem(parts, i), axis=[axis]) for i in range(n)])]


@_grad("where")
def _where_grad(call: Call, g: Expr) -> list[Expr]:
    cond, lhs, rhs = call.args
    zero = zeros_like(g)
    return [
        zeros_like(cond),
        collapse_sum_like(where(cond, g, zero), lhs),
        collapse_sum_like(where(cond, zero, g), rhs),
    ]


# -- reductions -------------------------------------------------------------------------------


def _kept_like(call: Call, value: Expr) -> Expr:
    """A reduction's output ``value`` broadcast back over the reduced input."""
    x = call.args[0]
    ndim = _ttype(x).ndim
    axes = call.attrs.axis
    reduced = set(range(ndim)) if axes is None else {int(a) % ndim for a in axes}
    if call.attrs.exclude:
        reduced = set(range(ndim)) - reduced
    if not call.attrs.keepdims:
        kept = [1 if i in reduced else int(d) for i, d in enumerate(_static_shape(x, "reduce"))]
        value = reshape(value, kept)
    return broadcast_to_like(value, x)


@_grad("max", "min")
def _max_grad(call: Call, g: Expr) -> list[Expr]:
    """``g`` shared equally among the elements equal to the extreme value."""
    x = call.args[0]
    mask = cast_like(equal(x, _kept_like(call, call)), x)
    a = call.attrs
    count = _kept_like(call, _sum(mask, axis=a.axis, keepdims=a.keepdims, exclude=a.exclude))
    return [divide(multiply(_kept_like(call, g), mask), count)]


@_grad("variance")
def _variance_grad(call: Call, g: Expr) -> list[Expr]:
    x, mean = call.args
    shape = _static_shape(x, "variance")
    out = _static_shape(call, "variance")
    count = int(np.prod(shape, dtype=np.int64)) // max(int(np.prod(out, dtype=np.int64)), 1)
    if call.attrs.unbiased:
        count -= 1
    dtype = _ttype(x).dtype
    scale = Constant(np.array(2.0 / max(count, 1), dtype=dtype))
    dx = multiply(multiply(_kept_like(call, g), subtract(x, mean)), scale)
    return [dx, collapse_sum_like(negative(dx), mean)]


# -- batched matrix products ------------------------------------------------------------------


def _swap_last(e: Expr) -> Expr:
    return transpose(e, [0, 2, 1])


@_grad("nn.batch_matmul")
def _batch_matmul_grad(call: Call, g: Expr) -> list[Expr]:
    """``out = A @ B`` with ``A = a`` (or ``a^T``) and ``B = b`` (or ``b^T``):
    ``dA = g @ B^T`` and ``dB = A^T @ g``, transposed back, and summed over a broadcast
    batch."""
    a, b = call.args
    ta, tb = bool(call.attrs.transpose_a), bool(call.attrs.transpose_b)
    d_a: Expr = batch_matmul(g, b, transpose_a=False, transpose_b=not tb)  # g @ B^T
    d_b: Expr = batch_matmul(a, g, transpose_a=not ta, transpose_b=False)  # A^T @ g
    if ta:
        d_a = _swap_last(d_a)
    if tb:
        d_b = _swap_last(d_b)
    return [collapse_sum_like(d_a, a), collapse_sum_like(d_b, b)]
