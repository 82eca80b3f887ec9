"""Variance and standard deviation (TVM's ``relay.variance``, ``std``, ``mean_variance``,
``mean_std``).

``variance(data, axis, keepdims, exclude, unbiased)`` is the ``variance``
operator applied to ``data`` and its mean (kept as size 1), as Relay builds it:
the mean is an ordinary ``mean`` call that passes can share or fold.
``unbiased=True`` divides by ``N - 1`` (Bessel's correction).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 3))
>>> v = variance(x, axis=1, unbiased=True)
>>> v.op.name, v.args[1].op.name, v.attrs.unbiased
('variance', 'mean', True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, TupleWrapper
from relaykit.ir.expr import Tuple as TupleExpr
from relaykit.ir.types import TensorType, Type

from . import _numeric as num
from ._relations import tensor_arg
from .define import OpPattern, TypeRelError, define_op, make_call
from .reduce import _out_shape, _reduce_args, mean, reduce_axes
from .tensor import sqrt

__all__ = ["variance", "std", "mean_variance", "mean_std"]


def _variance_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    m = tensor_arg(arg_types, 1, "mean")
    axes = reduce_axes(attrs, data.ndim)
    if any(data.shape[a] == 0 for a in axes):
        raise TypeRelError(f"cannot take the variance over an empty axis of {data}")
    if m.dtype != data.dtype:
        raise TypeRelError(f"mean must have the dtype of data, got {m} for {data}")
    return TensorType(_out_shape(data.shape, axes, attrs.keepdims), data.dtype)


def _variance_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, m = inputs
    axes = reduce_axes(attrs, x.ndim)
    count = int(np.prod([x.shape[a] for a in axes]))
    dev = x.astype(np.float64) - m.astype(np.float64)
    total = np.sum(dev * dev, axis=axes, keepdims=bool(attrs.keepdims))
    with np.errstate(all="ignore"):
        out = total / (count - 1 if attrs.unbiased else count)
    return num.as_out(out, x.dtype)


define_op(
    "variance",
    num_inputs=2,
    attrs={"axis": None, "keepdims": False, "exclude": False, "unbiased": False},
    attrs_type_key="relay.attrs.VarianceAttrs",
    type_rel=_variance_rel,
    compute=_variance_kernel,
    pattern=OpPattern.COMM_REDUCE,
    doc="The variance of data around a given mean, over axis.",
)


def variance(
    data: Expr,
    axis: Any = None,
    keepdims: bool = False,
    exclude: bool = False,
    unbiased: bool = False,
) -> Call:
    """The variance of ``data`` over ``axis`` (all axes when None)."""
    m = mean(data, axis, True, exclude)
    return make_call(
        "variance",
        [data, m],
        axis=_reduce_args(axis),
        keepdims=bool(keepdims),
        exclude=bool(exclude),
        unbiased=bool(unbiased),
    )


def std(
    data: Expr,
    axis: Any = None,
    keepdims: bool = False,
    exclude: bool = False,
    unbiased: bool = False,
) -> Call:
    """The standard deviation of ``data`` over ``axis``."""
    return sqrt(variance(data, axis, keepdims, exclude, unbiased))


def mean_variance(
    data: Expr,
    axis: Any = None,
    keepdims: bool = False,
    exclude: bool = False,
    unbiased: bool = False,
) -> TupleWrapper:
    """``(mean, variance)`` of ``data`` over ``axis``."""
    m = mean(data, axis, keepdims, exclude)
    return TupleWrapper(TupleExpr([m, variance(data, axis, keepdims, exclude, unbiased)]), 2)


def mean_std(
    data: Expr,
    axis: Any = None,
    keepdims: bool = False,
    exclude: bool = False,
    unbiased: bool = False,
) -> TupleWrapper:
    """``(mean, standard deviation)`` of ``data`` over ``axis``."""
    m = mean(data, axis, keepdims, exclude)
    return TupleWrapper(TupleExpr([m, std(data, axis, keepdims, exclude, unbiased)]), 2)
