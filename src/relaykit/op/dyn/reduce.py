"""Reductions and running sums whose axes are run-time tensors (ONNX ``ReduceSum`` & co.
with an ``axes`` input, ``CumSum``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import normalize_axis, tensor_arg
from relaykit.op.define import TypeRelError, make_call

from ._base import (
    Kernel,
    define_dyn_op,
    ints,
    scalar_int,
    shape_input,
    static_kernel,
    unknown,
)

__all__ = [
    "REDUCTIONS",
    "cumulative",
    "reduce",
    "sum_",
]


def _axis_of(value: np.ndarray, ndim: int) -> int:
    a = int(np.asarray(value).reshape(-1)[0])
    return normalize_axis(a, ndim, "axis")


# -- reductions over run-time axes ----------------------------------------------------------------

#: the reductions with a ``dyn.`` twin taking the axes as a 1-D integer tensor
REDUCTIONS = ("sum", "mean", "max", "min", "prod")


def _reduce_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n = shape_input(arg_types, 1, "axes")
    if n == 0:  # no axes: every axis, or none at all
        if attrs.noop_with_empty_axes:
            return data
        return TensorType((1,) * data.ndim if attrs.keepdims else (), data.dtype)
    if attrs.keepdims:
        return TensorType(unknown(data.ndim), data.dtype)
    if n > data.ndim:
        raise TypeRelError(f"cannot reduce {n} axes of {data}")
    return TensorType(unknown(data.ndim - n), data.dtype)


def _reduce_convert(v: Sequence[Any], a: Attrs) -> tuple[list[Any], dict[str, Any]]:
    axes = ints(v[1])
    axis: Any = axes if axes else (() if a.noop_with_empty_axes else None)
    return [v[0]], {"axis": axis, "keepdims": bool(a.keepdims)}


def _extreme(dtype: np.dtype, largest: bool) -> Any:
    """The identity of max (``largest=False``: the lowest value) or min over ``dtype``."""
    if dtype.kind == "f":
        return np.inf if largest else -np.inf
    if dtype.kind == "b":
        return largest
    info = np.iinfo(dtype)
    return info.max if largest else info.min


def _empty_safe(name: str, inner: Kernel) -> Kernel:
    """max/min over an empty extent are the type's lowest/highest value (ONNX), not an
    error."""

    def kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> Any:
        x = np.asarray(ins[0])
        if x.size:
            return inner(ins, attrs)
        _, sattrs = _reduce_convert(ins, attrs)
        axis = sattrs["axis"]
        axis = tuple(a % max(x.ndim, 1) for a in axis) if axis is not None else None
        shape = np.sum(np.zeros(x.shape, bool), axis=axis, keepdims=sattrs["keepdims"]).shape
        return np.full(shape, _extreme(x.dtype, name == "min"), dtype=x.dtype)

    return kernel


for _name in REDUCTIONS:
    define_dyn_op(
        f"dyn.{_name}",
        2,
        _reduce_rel,
        static=_name,
        convert=_reduce_convert,
        # max/min run their own kernel (the static one, safe on an empty extent)
        kernel=(
            _empty_safe(_name, static_kernel(_name, _reduce_convert))
            if _name in ("max", "min")
            else None
        ),
        attrs={"keepdims": False, "noop_with_empty_axes": False},
        value_inputs=(1,),
        doc=f"{_name} over the axes given by a run-time 1-D integer tensor (empty: every "
        "axis, or none with noop_with_empty_axes).",
    )


def reduce(
    name: str, data: Expr, axes: Expr, keepdims: bool = False, noop_with_empty_axes: bool = False
) -> Call:
    """``name`` (one of :data:`REDUCTIONS`) of ``data`` over the run-time ``axes``."""
    if name not in REDUCTIONS:
        raise TypeRelError(f"no dynamic reduction {name!r}; there are {', '.join(REDUCTIONS)}")
    return make_call(
        f"dyn.{name}",
        [data, axes],
        keepdims=bool(keepdims),
        noop_with_empty_axes=bool(noop_with_empty_axes),
    )


def sum_(data: Expr, axes: Expr, keepdims: bool = False) -> Call:
    """The sum of ``data`` over the run-time ``axes``."""
    return reduce("sum", data, axes, keepdims)


# -- cumulative sums and products along a run-time axis --------------------------------------------


def _cumulative_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    scalar_int(arg_types, 1, "axis")
    return tensor_arg(arg_types, 0, "data")


def _cumulative_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = np.asarray(ins[0])
    a = _axis_of(ins[1], x.ndim)
    fn = np.cumprod if attrs.op == "prod" else np.cumsum
    data = np.flip(x, a) if attrs.reverse else x
    out = fn(data, axis=a, dtype=x.dtype)
    if attrs.exclusive:
        first = np.full_like(np.take(out, [0], axis=a), 1 if attrs.op == "prod" else 0)
        rest = np.take(out, np.arange(out.shape[a] - 1), axis=a)
        out = np.concatenate([first, rest], axis=a)
    return np.ascontiguousarray(np.flip(out, a) if attrs.reverse else out)


define_dyn_op(
    "dyn.cumulative",
    2,
    _cumulative_rel,
    kernel=_cumulative_kernel,
    attrs={"op": "sum", "exclusive": False, "reverse": False},
    doc="Cumulative sum or product (op) along a run-time axis, optionally exclusive and "
    "from the end.",
)


def cumulative(
    data: Expr, axis: Expr, op: str = "sum", exclusive: bool = False, reverse: bool = False
) -> Call:
    """Cumulative ``op`` ("sum" or "prod") of ``data`` along the run-time scalar ``axis``."""
    return make_call(
        "dyn.cumulative", [data, axis], op=op, exclusive=bool(exclusive), reverse=bool(reverse)
    )


del _name
