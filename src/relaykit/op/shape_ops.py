"""Operators about shapes and run-time sizes: ``shape_of``, ``ndarray_size``, ``arange``
(static or with run-time bounds), ``argwhere`` and ``one_hot``.

``shape_of`` and ``ndarray_size`` read an input's run-time shape (so a model with ``?``
dimensions can compute with it); ``arange`` with expression bounds and ``argwhere`` have
sizes known only from input values (data-dependent shape functions).

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(relay.Any(), 3))
>>> f = relay.Function([x], relay.shape_of(x))
>>> relay.create_executor("debug").evaluate(f)(np.zeros((5, 3), "float32")).numpy().tolist()
[5, 3]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant, Expr, const
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, Type, check_dtype
from relaykit.op._relations import INT_DTYPES, normalize_axis, resolve_dtype, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call
from relaykit.op.shape_func import define_shape_func

__all__ = ["shape_of", "ndarray_size", "arange", "argwhere", "one_hot"]


# -- shape_of, ndarray_size ---------------------------------------------------------------------


def _shape_of_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType((data.ndim,), resolve_dtype(attrs.dtype, "int32", "dtype"))


define_op(
    "shape_of",
    num_inputs=1,
    attrs={"dtype": "int32"},
    attrs_type_key="relay.attrs.ShapeOfAttrs",
    type_rel=_shape_of_rel,
    compute=lambda ins, attrs: np.array(np.shape(ins[0]), dtype=attrs.dtype or "int32"),
    pattern=OpPattern.OPAQUE,
    doc="The run-time shape of a tensor, as a 1-D integer tensor.",
)


def shape_of(data: Expr, dtype: str = "int32") -> Call:
    """The shape of ``data`` at run time (``int32`` or ``int64`` vector)."""
    return make_call("shape_of", [data], dtype=check_dtype(dtype))


def _size_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    tensor_arg(arg_types, 0, "data")
    return TensorType((), resolve_dtype(attrs.dtype, "int32", "dtype"))


define_op(
    "ndarray_size",
    num_inputs=1,
    attrs={"dtype": "int32"},
    attrs_type_key="relay.attrs.NdarraySizeAttrs",
    type_rel=_size_rel,
    compute=lambda ins, attrs: np.array(math.prod(np.shape(ins[0])), dtype=attrs.dtype or "int32"),
    pattern=OpPattern.OPAQUE,
    doc="The number of elements of a tensor at run time, as a scalar.",
)


def ndarray_size(data: Expr, dtype: str = "int32") -> Call:
    """The element count of ``data`` at run time."""
    return make_call("ndarray_size", [data], dtype=check_dtype(dtype))


# -- arange ---------------------------------------------------------------------------------------


def arange_length(start: float, stop: float, step: float) -> int:
    """The number of values ``arange`` yields: ``ceil((stop - start) / step)``, at least 0."""
    if step == 0:
        raise TypeRelError("arange step must not be 0")
    return max(0, math.ceil((stop - start) / step))


def _arange_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    n = arange_length(attrs.start, attrs.stop, attrs.step)
    return TensorType((n,), resolve_dtype(attrs.dtype, "float32", "dtype"))


def _arange_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    dtype = attrs.dtype or "float32"
    n = arange_length(attrs.start, attrs.stop, attrs.step)
    return (attrs.start + np.arange(n, dtype="float64") * attrs.step).astype(dtype)


define_op(
    "arange",
    num_inputs=0,
    attrs={"start": 0, "stop": None, "step": 1, "dtype": "float32"},
    attrs_type_key="relay.attrs.ArangeAttrs",
    type_rel=_arange_rel,
    compute=_arange_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Evenly spaced values in [start, stop), all known at compile time.",
)


def _number(x: Any) -> Any:
    if isinstance(x, Constant) and x.data.numpy().ndim == 0:
        return x.data.numpy().item()
    return x


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: str = "float32") -> Call:
    """Values from ``start`` to ``stop`` (exclusive) by ``step``; with one argument, from
    0 to it. Numbers (or scalar constants) give a static ``arange``; an expression bound
    gives ``dyn.arange`` with a ``?`` length."""
    if stop is None:
        start, stop = 0, start
    dtype = check_dtype(dtype)
    vals = [_number(v) for v in (start, stop, step)]
    if not any(isinstance(v, Expr) for v in vals):
        return make_call("arange", [], start=vals[0], stop=vals[1], step=vals[2], dtype=dtype)
    args = [v if isinstance(v, Expr) else const(v, dtype) for v in vals]
    return make_call("dyn.arange", args, dtype=dtype)


# -- argwhere -------------------------------------------------------------------------------------


def _argwhere_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    cond = tensor_arg(arg_types, 0, "condition")
    return TensorType((AnyDim(), cond.ndim), "int32")


define_op(
    "argwhere",
    num_inputs=1,
    type_rel=_argwhere_rel,
    compute=lambda ins, attrs: np.argwhere(ins[0]).astype("int32"),
    pattern=OpPattern.OPAQUE,
    doc="The indices of the non-zero entries, one row per entry (count known at run time).",
)


@define_shape_func("argwhere", data_dependent=True)
def _argwhere_shape(attrs: Attrs, inputs: Sequence[Any]) -> list[tuple[int, ...]]:
    cond = np.asarray(inputs[0])
    return [(int(np.count_nonzero(cond)), cond.ndim)]


def argwhere(condition: Expr) -> Call:
    """The (count, rank) ``int32`` indices where ``condition`` is non-zero."""
    return make_call("argwhere", [condition])


# -- one_hot --------------------------------------------------------------------------------------


def _one_hot_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    indices = tensor_arg(arg_types, 0, "indices")
    on = tensor_arg(arg_types, 1, "on_value")
    off = tensor_arg(arg_types, 2, "off_value")
    if indices.dtype not in INT_DTYPES:
        raise TypeRelError(f"indices must be an integer tensor, got {indices}")
    if on.ndim != 0 or off.ndim != 0:
        raise TypeRelError(f"on_value and off_value must be scalars, got {on} and {off}")
    depth = attrs.depth
    if not isinstance(depth, int) or depth < 0:
        raise TypeRelError(f"depth must be a non-negative integer, got {depth!r}")
    axis = normalize_axis(attrs.axis, indices.ndim, "one_hot axis", extra=1)
    shape = list(indices.shape)
    shape.insert(axis, depth)
    return TensorType(shape, resolve_dtype(attrs.dtype, on.dtype, "dtype"))


def _one_hot_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    indices, on, off = ins
    depth = int(attrs.depth)
    axis = attrs.axis % (indices.ndim + 1)
    hot = np.expand_dims(indices, axis) == np.arange(depth).reshape(
        [-1 if i == axis else 1 for i in range(indices.ndim + 1)]
    )
    dtype = attrs.dtype or on.dtype
    return np.where(hot, on, off).astype(dtype)


define_op(
    "one_hot",
    num_inputs=3,
    attrs={"depth": 1, "axis": -1, "dtype": "float32"},
    attrs_type_key="relay.attrs.OneHotAttrs",
    type_rel=_one_hot_rel,
    compute=_one_hot_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="One-hot encoding: on_value where the index equals the position, else off_value.",
)


def one_hot(
    indices: Expr, on_value: Any, off_value: Any, depth: Any, axis: int, dtype: str
) -> Call:
    """A one-hot tensor with a new ``axis`` of size ``depth``; an expression ``depth``
    builds ``dyn.one_hot``."""
    dtype = check_dtype(dtype)
    on = on_value if isinstance(on_value, Expr) else const(on_value, dtype)
    off = off_value if isinstance(off_value, Expr) else const(off_value, dtype)
    depth = _number(depth)
    if isinstance(depth, Expr):
        return make_call("dyn.one_hot", [indices, on, off, depth], axis=int(axis), dtype=dtype)
    return make_call("one_hot", [indices, on, off], depth=int(depth), axis=int(axis), dtype=dtype)
