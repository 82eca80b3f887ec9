"""Reductions: sum, mean, max, min, prod, all, any, argmax, argmin, and ``logsumexp``.

``axis`` is an int, a list of ints or ``None`` (all axes); ``exclude=True``
reduces every axis *except* those listed; ``keepdims`` keeps reduced axes as
size 1. ``argmax``/``argmin`` return ``int32`` indices, as in TVM.

``logsumexp(data, axis, keepdims)`` is ``log(sum(exp(data)))`` over ``axis``, built
(as in TVM) from ``max``, ``exp``, ``sum`` and ``log`` so that it is stable for large
inputs: ``log(sum(exp(x - m))) + m`` with ``m`` the maximum over ``axis``.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 3))
>>> sum(x, axis=1).attrs.axis
[1]
>>> argmax(x).attrs.keepdims
False
>>> logsumexp(x, axis=1).op.name
'squeeze'
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type

from . import _numeric as num
from ._relations import normalize_axes, tensor_arg
from .define import OpPattern, TypeRelError, define_op, make_call
from .tensor import add, exp, log, subtract
from .transform import squeeze

__all__ = ["sum", "mean", "max", "min", "prod", "all", "any", "argmax", "argmin", "logsumexp"]

_REDUCE_ATTRS = {"axis": None, "keepdims": False, "exclude": False}
_ARG_REDUCE_ATTRS = {"axis": None, "keepdims": False, "select_last_index": False, "exclude": False}


def reduce_axes(attrs: Attrs, ndim: int) -> tuple[int, ...]:
    """The sorted axes a reduction with ``attrs`` reduces over."""
    if attrs.axis is None:
        return tuple(range(ndim))
    axes = normalize_axes(attrs.axis, ndim, "reduction axis")
    if attrs.exclude:
        axes = tuple(a for a in range(ndim) if a not in axes)
    return tuple(sorted(axes))


def _out_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _make_rel(out_dtype: str = "", bool_only: bool = False, nonempty: bool = False):
    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        if bool_only and data.dtype != "bool":
            raise TypeRelError(f"data must be a bool tensor, got {data}")
        axes = reduce_axes(attrs, data.ndim)
        if nonempty and builtins.any(data.shape[a] == 0 for a in axes):
            raise TypeRelError(f"cannot reduce over an empty axis of {data}")
        return TensorType(_out_shape(data.shape, axes, attrs.keepdims), out_dtype or data.dtype)

    return rel


def _reduce_kernel(fn: Callable[..., Any]) -> Callable:
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = inputs[0]
        axes = reduce_axes(attrs, x.ndim)
        with np.errstate(all="ignore"):
            return num.as_out(fn(x, axis=axes, keepdims=bool(attrs.keepdims)), x.dtype)

    return compute


def _mean(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    if x.dtype.kind == "f":
        return np.mean(x, axis=axis, keepdims=keepdims)
    total = np.asarray(np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64))
    count = int(np.prod([x.shape[a] for a in axis]))
    return num.trunc_divide(total, np.int64(count))


_REDUCERS: dict[str, tuple[Callable[..., Any], Any]] = {
    "sum": (np.sum, _make_rel()),
    "mean": (_mean, _make_rel(nonempty=True)),
    "max": (np.max, _make_rel(nonempty=True)),
    "min": (np.min, _make_rel(nonempty=True)),
    "prod": (np.prod, _make_rel()),
    "all": (np.all, _make_rel(bool_only=True)),
    "any": (np.any, _make_rel(bool_only=True)),
}

for _name, (_fn, _rel) in _REDUCERS.items():
    define_op(
        _name,
        num_inputs=1,
        attrs=_REDUCE_ATTRS,
        attrs_type_key="relay.attrs.ReduceAttrs",
        type_rel=_rel,
        compute=_reduce_kernel(_fn),
        pattern=OpPattern.COMM_REDUCE,
        doc=f"Reduce with {_name}.",
    )


def _reduce_args(axis: Any) -> Any:
    if axis is None:
        return None
    if isinstance(axis, (int, np.integer)):
        return (int(axis),)
    return tuple(int(a) for a in axis)


def _reduce_ctor(name: str, what: str) -> Callable[..., Call]:
    def reducer(data: Expr, axis: Any = None, keepdims: bool = False, exclude: bool = False):
        return make_call(
            name, [data], axis=_reduce_args(axis), keepdims=bool(keepdims), exclude=bool(exclude)
        )

    reducer.__name__ = reducer.__qualname__ = name
    reducer.__doc__ = (
        f"The {what} of ``data`` over ``axis`` (all axes when None).\n\n"
        f"``exclude=True`` reduces the other axes; ``keepdims`` keeps reduced axes as size 1."
    )
    return reducer


sum = _reduce_ctor("sum", "sum")
mean = _reduce_ctor("mean", "mean")
max = _reduce_ctor("max", "maximum")
min = _reduce_ctor("min", "minimum")
prod = _reduce_ctor("prod", "product")
all = _reduce_ctor("all", "logical and")
any = _reduce_ctor("any", "logical or")


# -- argmax / argmin ------------------------------------------------------------------------------


def _arg_reduce_kernel(fn: Callable[..., np.ndarray]) -> Callable:
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = inputs[0]
        axes = reduce_axes(attrs, x.ndim)
        kept = [a for a in range(x.ndim) if a not in axes]
        moved = np.transpose(x, kept + list(axes))
        flat = moved.reshape((*moved.shape[: len(kept)], -1))
        if attrs.select_last_index:
            idx = flat.shape[-1] - 1 - fn(flat[..., ::-1], axis=-1)
        else:
            idx = fn(flat, axis=-1)
        return num.as_out(idx.reshape(_out_shape(x.shape, axes, attrs.keepdims)), np.int32)

    return compute


for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    define_op(
        _name,
        num_inputs=1,
        attrs=_ARG_REDUCE_ATTRS,
        attrs_type_key="relay.attrs.ArgReduceAttrs",
        type_rel=_make_rel(out_dtype="int32", nonempty=True),
        compute=_arg_reduce_kernel(_fn),
        pattern=OpPattern.COMM_REDUCE,
        doc=f"Indices (int32) of the {_name[3:]}imum.",
    )


def argmax(
    data: Expr,
    axis: Any = None,
    keepdims: bool = False,
    exclude: bool = False,
    select_last_index: bool = False,
) -> Call:
    """The int32 index of the maximum of ``data`` along ``axis``.

    Over several axes, the index is into those axes flattened (row-major).

    >>> from relaykit import relay
    >>> argmax(relay.var("x", shape=(2, 3)), axis=1).attrs.axis
    [1]
    """
    return make_call(
        "argmax",
        [data],
        axis=_reduce_args(axis),
        keepdims=bool(keepdims),
        select_last_index=bool(select_last_index),
        exclude=bool(exclude),
    )


def argmin(
    data: Expr,
    axis: Any = None,
    keepdims: bool = False,
    exclude: bool = False,
    select_last_index: bool = False,
) -> Call:
    """The int32 index of the minimum of ``data`` along ``axis`` (see :func:`argmax`)."""
    return make_call(
        "argmin",
        [data],
        axis=_reduce_args(axis),
        keepdims=bool(keepdims),
        select_last_index=bool(select_last_index),
        exclude=bool(exclude),
    )


# -- logsumexp -----------------------------------------------------------------------------------


def logsumexp(data: Expr, axis: Any = None, keepdims: bool = False) -> Expr:
    """``log(sum(exp(data), axis))``, computed stably by subtracting the maximum."""
    max_x = max(data, axis, True)
    sum_x = sum(exp(subtract(data, max_x)), axis, True)
    out = add(log(sum_x), max_x)
    if keepdims:
        return out
    if axis is None:
        return squeeze(out)
    return squeeze(out, [axis] if isinstance(axis, int) else list(axis))


del _name, _fn, _rel
