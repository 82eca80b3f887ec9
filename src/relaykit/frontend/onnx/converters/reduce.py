"""ONNX converters: reductions (``Reduce*``) and ``ArgMax`` / ``ArgMin``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.narrow import int_range
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr
from relaykit.op import dyn

from .common import scalar

__all__: list[str] = []

# name: (builder(x, axes, keepdims, dtype), value over an empty set)
_EMPTY = {
    "ReduceSum": 0.0,
    "ReduceMean": np.nan,
    "ReduceMax": -np.inf,
    "ReduceMin": np.inf,
    "ReduceProd": 1.0,
    "ReduceL1": 0.0,
    "ReduceL2": 0.0,
    "ReduceLogSum": -np.inf,
    "ReduceLogSumExp": -np.inf,
    "ReduceSumSquare": 0.0,
}


#: Reductions that are one relay operator.
_PLAIN: dict[str, Callable[[Expr, Any, bool], Expr]] = {
    "ReduceSum": op.sum,
    "ReduceMean": op.mean,
    "ReduceMax": op.max,
    "ReduceMin": op.min,
    "ReduceProd": op.prod,
}


def _build(name: str, x: Expr, axes: Any, keep: bool, dt: str, red: Any = None) -> Expr:
    """``red(kind, x)`` reduces with the node's axes (static ones by default)."""
    if red is None:
        fns = {"sum": op.sum, "mean": op.mean, "max": op.max, "min": op.min, "prod": op.prod}

        def red(kind: str, v: Expr) -> Expr:
            return fns[kind](v, axes, keep)

    if name in _PLAIN:
        return red(name[len("Reduce") :].lower(), x)
    if name == "ReduceL1":
        return red("sum", op.abs(x))
    if name == "ReduceL2":
        if not dt.startswith("float"):
            s = red("sum", op.multiply(x, x))
            return op.cast(op.sqrt(op.cast(s, "float32")), dt)
        return op.sqrt(red("sum", op.multiply(x, x)))
    if name == "ReduceLogSum":
        return op.log(red("sum", x))
    if name == "ReduceLogSumExp":
        return op.log(red("sum", op.exp(x)))
    return red("sum", op.multiply(x, x))  # ReduceSumSquare


def _reduce_dynamic(
    ctx: NodeContext, name: str, x: Expr, axes: Expr, keepdims: int, noop: int
) -> Expr:
    """A reduction over axes known at run time: the ``dyn.`` reductions."""

    def red(kind: str, v: Expr) -> Expr:
        return dyn.reduce(kind, v, axes, bool(keepdims), bool(noop))

    return _build(name, x, None, bool(keepdims), ctx.dtype(x), red)


def _reduce(ctx: NodeContext, name: str, x: Expr, axes: Any, keepdims: int, noop: int) -> Expr:
    shape = ctx.shape(x)
    dt = ctx.dtype(x)
    if axes is None or len(axes) == 0:
        if noop:
            return x
        axes = tuple(range(len(shape)))
    axes = tuple(sorted(int(a) % max(len(shape), 1) for a in axes))
    keep = bool(keepdims)
    if any(shape[a] == 0 for a in axes):
        out_shape = tuple((1 if keep else None) if i in axes else d for i, d in enumerate(shape))
        out_shape = tuple(d for d in out_shape if d is not None)
        value = _EMPTY[name]
        ctx.check_constant(out_shape, 8, "the result of an empty reduction")
        if dt.startswith("float"):
            return Constant(np.full(out_shape, value, dtype=dt))
        lo, hi = (False, True) if dt == "bool" else int_range(dt)
        fill = {np.inf: hi, -np.inf: lo}.get(value, 0 if np.isnan(value) else value)
        return Constant(np.full(out_shape, fill, dtype=dt))
    if not shape:
        return _build(name, x, None, keep, dt) if name != "ReduceMax" else x
    return _build(name, x, axes, keep, dt)


def _attr_axes_converter(name: str):
    def convert(ctx: NodeContext, x: Expr, *, axes: Any = None, keepdims: int = 1) -> Expr:
        return _reduce(ctx, name, x, axes, keepdims, 0)

    return convert


def _input_axes_converter(name: str):
    def convert(
        ctx: NodeContext,
        x: Expr,
        axes: Expr | None = None,
        *,
        keepdims: int = 1,
        noop_with_empty_axes: int = 0,
    ) -> Expr:
        if axes is not None and not ctx.is_constant(axes):
            return _reduce_dynamic(ctx, name, x, axes, keepdims, noop_with_empty_axes)
        ax = None if axes is None else ctx.ints(axes, "axes")
        return _reduce(ctx, name, x, ax, keepdims, noop_with_empty_axes)

    return convert


for _name in _EMPTY:
    converter(_name, 1)(_attr_axes_converter(_name))
    converter(_name, 13 if _name == "ReduceSum" else 18)(_input_axes_converter(_name))


def _arg_converter(fn: Any):
    def convert(
        ctx: NodeContext, x: Expr, *, axis: int = 0, keepdims: int = 1, select_last_index: int = 0
    ) -> Expr:
        out = fn(x, axis=axis, keepdims=bool(keepdims), select_last_index=bool(select_last_index))
        return op.cast(out, "int64")

    return convert


converter("ArgMax", 1)(_arg_converter(op.argmax))
converter("ArgMin", 1)(_arg_converter(op.argmin))

_ = scalar
del _name
