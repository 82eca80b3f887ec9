"""Converters of the ``keras.ops`` a functional model records between layers: Python
operators on tensors (``x + y``, ``x * 0.5``, ``x @ w``, ``x ** 2``) and calls such as
``keras.ops.reshape``, ``transpose``, ``concatenate``, ``mean``, ``relu``.

Each receives the call's positional arguments as given (tensors as expressions, the
rest as Python values) and reads its settings from the operation (``op.axis``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .registry import LayerContext, operation_converter

__all__: list[str] = []

Kwargs = dict[str, Any]

_BINARY: dict[str, Callable[[Expr, Expr], Expr]] = {
    "Add": op.add,
    "Subtract": op.subtract,
    "Multiply": op.multiply,
    "Divide": op.divide,
    "TrueDivide": op.divide,
    "Maximum": op.maximum,
    "Minimum": op.minimum,
    "Power": op.power,
    "Equal": op.equal,
    "NotEqual": op.not_equal,
    "Greater": op.greater,
    "GreaterEqual": op.greater_equal,
    "Less": op.less,
    "LessEqual": op.less_equal,
    "LogicalAnd": op.logical_and,
    "LogicalOr": op.logical_or,
}


def _operand(ctx: LayerContext, value: Any, like: Expr, position: int) -> Expr:
    if isinstance(value, Expr):
        return value
    arr = np.asarray(value)
    if arr.ndim == 0:
        return ctx.scalar(float(arr), like)
    return ctx.weight(f"operand{position}", arr.astype(ctx.dtype(like)))


@operation_converter(*_BINARY)
def _binary(ctx: LayerContext, operation: Any, args: list[Any], kwargs: Kwargs) -> Expr:
    if len(args) != 2:
        raise ctx.fail(f"expected 2 operands, got {len(args)}")
    a, b = args
    like = a if isinstance(a, Expr) else b
    fn = _BINARY[type(operation).__name__]
    return fn(_operand(ctx, a, like, 0), _operand(ctx, b, like, 1))


_UNARY: dict[str, Callable[[Expr], Expr]] = {
    "Negative": op.negative,
    "LogicalNot": op.logical_not,
    "Relu": nn.relu,
    "Sigmoid": op.sigmoid,
    "Tanh": op.tanh,
    "Exp": op.exp,
    "Log": op.log,
    "Sqrt": op.sqrt,
    "Absolute": op.abs,
    "Abs": op.abs,
    "Square": lambda x: op.multiply(x, x),
}


@operation_converter(*_UNARY)
def _unary(ctx: LayerContext, operation: Any, args: list[Any], kwargs: Kwargs) -> Expr:
    return _UNARY[type(operation).__name__](args[0])


@operation_converter("Matmul")
def _matmul(ctx: LayerContext, operation: Any, args: list[Any], kwargs: Kwargs) -> Expr:
    like = args[0] if isinstance(args[0], Expr) else args[1]
    a, b = (_operand(ctx, v, like, i) for i, v in enumerate(args))
    na, nb = ctx.ndim(a), ctx.ndim(b)
    if na == 2 and nb == 2:
        return nn.matmul(a, b)
    if na == nb == 3:
        return nn.batch_matmul(a, b, transpose_b=False)
    if nb == 2:  # (..., k) @ (k, n)
        return nn.dense(a, op.transpose(b, [1, 0]))
    raise ctx.fail(f"matmul of ranks {na} and {nb} is not supported")


@operation_converter("Reshape")
def _reshape(ctx: LayerContext, operation: Any, args: list[Any], kwargs: Kwargs) -> Expr:
    return op.reshape(args[0], [int(d) for d in operation.newshape])


@operation_converter("Transpose")
def _transpose(ctx: LayerContext, operation: Any, args: list[Any], kwargs: Kwargs) -> Expr:
    axes = operation.axes
    return op.transpose(args[0], None if axes is None else [int(a) for a in axes])


@operation_converter("ExpandDims")
def _expand_dims(ctx: LayerContext, operation: Any, args: list[Any], kwargs: Kwargs) -> Expr:
    x = args[0]
    axis = int(operation.axis)
    return op.expand_dims(x, axis if axis >= 0 else axis + ctx.ndim(x) + 1)


@operation_converter("Squeeze")
def _squeeze(ctx: LayerContext, operation: Any, args: list[Any], kwargs: Kwargs) -> Expr:
    axis = operation.axis
    axes = None if axis is None else [int(a) for a in np.atleast_1d(axis)]
    return op.squeeze(args[0], axes)


@operation_converter("Concatenate")
def _concatenate(ctx: LayerContext, operation: Any, args: list[Any], kwargs: Kwargs) -> Expr:
    return op.concatenate(list(args[0]), axis=int(operation.axis))


@operation_converter("Cast")
def _cast(ctx: LayerContext, operation: Any, args: list[Any], kwargs: Kwargs) -> Expr:
    return op.cast(args[0], str(operation.dtype))


@operation_converter("Softmax")
def _softmax(ctx: LayerContext, operation: Any, args: list[Any], kwargs: Kwargs) -> Expr:
    return nn.softmax(args[0], axis=int(operation.axis))


_REDUCE = {"Mean": op.mean, "Sum": op.sum, "Max": op.max, "Min": op.min}


@operation_converter(*_REDUCE)
def _reduce(ctx: LayerContext, operation: Any, args: list[Any], kwargs: Kwargs) -> Expr:
    axis = operation.axis
    axes = None if axis is None else [int(a) for a in np.atleast_1d(axis)]
    if getattr(operation, "initial", None) is not None:
        raise ctx.fail("a reduction with an initial value is not supported")
    fn = _REDUCE[type(operation).__name__]
    return fn(args[0], axes, keepdims=bool(operation.keepdims))
