"""More reductions and slicing: ``logsumexp`` and ``strided_set``.

``logsumexp(data, axis, keepdims)`` is ``log(sum(exp(data)))`` over ``axis``, built
(as in TVM) from ``max``, ``exp``, ``sum`` and ``log`` so that it is stable for large
inputs: ``log(sum(exp(x - m))) + m`` with ``m`` the maximum over ``axis``.

``strided_set(data, v, begin, end, strides)`` is ``data`` with the strided slice
``data[begin:end:strides]`` replaced by ``v``; ``begin``, ``end`` and ``strides`` are
1-D integer tensors (constants), clamped like ``strided_slice``'s.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 3))
>>> logsumexp(x, axis=1).op.name
'squeeze'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import ExecutionError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, const
from relaykit.ir.types import Type

from ._relations import tensor_arg
from .define import OpPattern, TypeRelError, define_op, make_call
from .reduce import max as reduce_max
from .reduce import sum as reduce_sum
from .tensor import add, exp, log, subtract
from .transform import _slices, squeeze

__all__ = ["logsumexp", "strided_set"]


def logsumexp(data: Expr, axis: Any = None, keepdims: bool = False) -> Expr:
    """``log(sum(exp(data), axis))``, computed stably by subtracting the maximum."""
    max_x = reduce_max(data, axis, True)
    sum_x = reduce_sum(exp(subtract(data, max_x)), axis, True)
    out = add(log(sum_x), max_x)
    if keepdims:
        return out
    if axis is None:
        return squeeze(out)
    return squeeze(out, [axis] if isinstance(axis, int) else list(axis))


# -- strided_set ----------------------------------------------------------------------------------


def _strided_set_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    v = tensor_arg(arg_types, 1, "v")
    if v.dtype != data.dtype:
        raise TypeRelError(f"strided_set value {v} must have the dtype of data {data}")
    for i, what in ((2, "begin"), (3, "end"), (4, "strides")):
        t = tensor_arg(arg_types, i, what)
        if t.ndim != 1 or not t.dtype.startswith(("int", "uint")):
            raise TypeRelError(f"strided_set {what} must be a 1-D integer tensor, got {t}")
    return data


def _strided_set_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, v, begin, end, strides = ins
    spec = Attrs(
        {
            "begin": tuple(int(b) for b in begin),
            "end": tuple(int(e) for e in end),
            "strides": tuple(int(s) for s in strides),
            "slice_mode": "end",
            "axes": None,
        }
    )
    slices, shape = _slices(data.shape, spec)
    out = np.array(data, copy=True)
    try:
        out[slices] = np.broadcast_to(v, shape)
    except ValueError as exc:
        raise ExecutionError(
            f"strided_set value of shape {v.shape} does not fit the slice of shape {shape}; "
            "give v the shape of data[begin:end:strides]"
        ) from exc
    return out


define_op(
    "strided_set",
    num_inputs=5,
    type_rel=_strided_set_rel,
    compute=_strided_set_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Replace a strided slice of data with v.",
)


def strided_set(data: Expr, v: Expr, begin: Expr, end: Expr, strides: Expr | None = None) -> Call:
    """``data`` with ``data[begin:end:strides]`` set to ``v`` (strides default to 1)."""
    if strides is None:
        strides = const(np.array([1], dtype="int32"))
    return make_call("strided_set", [data, v, begin, end, strides])
