"""Index-driven operators: gather/scatter along an axis or by index tuples, a write
into a strided slice, cumulative sums and products, and top-k (TVM's ``relay.gather``,
``relay.gather_nd``, ``relay.scatter_elements``, ``relay.scatter_nd``,
``relay.strided_set``, ``relay.cumsum``, ``relay.cumprod``, ``relay.topk``, ``relay.sort``,
``relay.argsort``, ``relay.searchsorted``).

``strided_set(data, v, begin, end, strides)`` is ``data`` with the strided slice
``data[begin:end:strides]`` replaced by ``v``; ``begin``, ``end`` and ``strides`` are
1-D integer tensors (constants), clamped like ``strided_slice``'s.

Negative indices count from the end of the axis, as in ONNX and NumPy.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 3))
>>> i = relay.var("i", shape=(2, 1), dtype="int64")
>>> gather(x, 1, i).attrs.axis
1
>>> len(topk(x, k=2))
2
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from relaykit.errors import ExecutionError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, TupleWrapper, const
from relaykit.ir.types import TensorType, TupleType, Type, check_dtype

from . import _numeric as num
from ._relations import (
    INT_DTYPES,
    differ,
    normalize_axis,
    resolve_dtype,
    static,
    static_value,
    tensor_arg,
)
from .define import OpPattern, TypeRelError, define_op, make_call
from .transform import _slices

__all__ = [
    "gather",
    "gather_nd",
    "scatter_elements",
    "scatter_nd",
    "strided_set",
    "cumsum",
    "cumprod",
    "topk",
    "sort",
    "argsort",
    "searchsorted",
]

_I = OpPattern.INJECTIVE
_REDUCTIONS = ("none", "update", "add", "mul", "min", "max")


def _indices_arg(arg_types: Sequence[Type], i: int) -> TensorType:
    t = tensor_arg(arg_types, i, "indices")
    if t.dtype not in INT_DTYPES:
        raise TypeRelError(f"indices must be an integer tensor, got {t}")
    return t


def _wrap(indices: np.ndarray, size: int) -> np.ndarray:
    idx = indices.astype(np.int64)
    return np.where(idx < 0, idx + size, idx)


# -- gather (elements) ----------------------------------------------------------------------------


def _gather_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    idx = _indices_arg(arg_types, 1)
    normalize_axis(attrs.axis, data.ndim, "gather axis")
    if idx.ndim != data.ndim:
        raise TypeRelError(f"indices {idx} must have the rank of data {data}")
    return TensorType(idx.shape, data.dtype)


def _gather_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, idx = ins
    axis = attrs.axis % data.ndim
    return np.take_along_axis(data, _wrap(idx, data.shape[axis]), axis=axis)


define_op(
    "gather",
    num_inputs=2,
    attrs={"axis": 0},
    attrs_type_key="relay.attrs.GatherAttrs",
    type_rel=_gather_rel,
    compute=_gather_kernel,
    pattern=_I,
    doc="out[i][j][k] = data[i][indices[i][j][k]][k] for axis 1 (ONNX GatherElements).",
)


def gather(data: Expr, axis: int, indices: Expr) -> Call:
    """Elements of ``data`` picked along ``axis`` by ``indices`` of the same rank."""
    return make_call("gather", [data, indices], axis=int(axis))


# -- gather_nd ------------------------------------------------------------------------------------


def _gather_nd_shape(data: tuple[int, ...], idx: tuple[int, ...], b: int) -> tuple[int, ...]:
    if not idx:
        raise TypeRelError("gather_nd indices must have rank >= 1")
    m = idx[-1]
    if b + m > len(data):
        raise TypeRelError(
            f"gather_nd: batch_dims {b} + index depth {m} exceeds the rank of data {data}"
        )
    return idx[:-1] + data[b + m :]


def _tuples_last(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """The shape of TVM-layout indices ``(M, Y...)`` with the tuple axis moved last."""
    return (*shape[1:], shape[0]) if shape else shape


def _gather_nd_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    idx = _indices_arg(arg_types, 1)
    b = int(attrs.batch_dims)
    shape = _tuples_last(idx.shape)
    if any(differ(x, y) for x, y in zip(data.shape[:b], shape[:b], strict=False)):
        raise TypeRelError(f"gather_nd: the first {b} dims of {data} and {idx} must match")
    return TensorType(_gather_nd_shape(data.shape, shape, b), data.dtype)


def _gather_nd_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, idx = ins[0], np.moveaxis(ins[1], 0, -1)
    b = int(attrs.batch_dims)
    m = idx.shape[-1]
    batch = int(np.prod(data.shape[:b], dtype=np.int64))
    d = data.reshape((batch, *data.shape[b:]))
    ix = idx.reshape((batch, -1, m))
    cols = [_wrap(ix[..., k], d.shape[1 + k]) for k in range(m)]
    rows = np.arange(batch)[:, None]
    out = d[tuple([rows, *cols])]
    return out.reshape(_gather_nd_shape(data.shape, idx.shape, b))


define_op(
    "gather_nd",
    num_inputs=2,
    attrs={"batch_dims": 0, "index_rank": None},
    attrs_type_key="relay.attrs.GatherNDAttrs",
    type_rel=_gather_nd_rel,
    compute=_gather_nd_kernel,
    pattern=_I,
    doc="Gather slices of data by index tuples along the first axis of indices (TVM's).",
)


def gather_nd(
    data: Expr, indices: Expr, batch_dims: int = 0, index_rank: int | None = None
) -> Call:
    """Slices of ``data`` at index tuples held along the *first* axis of ``indices``, as
    in TVM: ``indices`` of shape ``(M, Y...)`` gives ``data[indices[:, y]]`` for each
    ``y``, shape ``(Y..., data.shape[M:])`` (after ``batch_dims`` leading dims shared by
    ``data`` and ``indices[0]``). ONNX's ``GatherND`` keeps the tuples on the last axis:
    move it first (``transpose``)."""
    return make_call(
        "gather_nd",
        [data, indices],
        batch_dims=int(batch_dims),
        index_rank=None if index_rank is None else int(index_rank),
    )


# -- scatter --------------------------------------------------------------------------------------


def _reduce_into(out: np.ndarray, where: tuple[Any, ...], upd: np.ndarray, reduction: str) -> None:
    if reduction in ("none", "update"):
        out[where] = upd
    elif reduction == "add":
        np.add.at(out, where, upd)
    elif reduction == "mul":
        np.multiply.at(out, where, upd)
    elif reduction == "min":
        np.minimum.at(out, where, upd)
    elif reduction == "max":
        np.maximum.at(out, where, upd)
    else:
        raise TypeRelError(f"unknown scatter reduction {reduction!r}")


def _scatter_elements_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    idx = _indices_arg(arg_types, 1)
    upd = tensor_arg(arg_types, 2, "updates")
    normalize_axis(attrs.axis, data.ndim, "scatter axis")
    if upd.shape != idx.shape or upd.dtype != data.dtype or idx.ndim != data.ndim:
        raise TypeRelError(f"updates {upd} must match indices {idx} and data {data}")
    if attrs.reduction not in _REDUCTIONS:
        raise TypeRelError(f"reduction must be one of {', '.join(_REDUCTIONS)}")
    return data


def _scatter_elements_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, idx, upd = ins
    axis = attrs.axis % data.ndim
    out = data.copy()
    grid: list[np.ndarray] = list(np.indices(idx.shape, sparse=True))
    grid[axis] = _wrap(idx, data.shape[axis])
    _reduce_into(out, tuple(grid), upd, attrs.reduction)
    return out


define_op(
    "scatter_elements",
    num_inputs=3,
    attrs={"axis": 0, "reduction": "update"},
    attrs_type_key="relay.attrs.ScatterElementsAttrs",
    type_rel=_scatter_elements_rel,
    compute=_scatter_elements_kernel,
    pattern=OpPattern.OPAQUE,
    doc="A copy of data with updates written (or reduced) at indices along axis.",
)


def scatter_elements(
    data: Expr, indices: Expr, updates: Expr, axis: int = 0, reduction: str = "update"
) -> Call:
    """``data`` with ``updates`` written at ``indices`` along ``axis``; ``reduction`` is
    ``"update"``, ``"add"``, ``"mul"``, ``"min"`` or ``"max"``."""
    return make_call(
        "scatter_elements", [data, indices, updates], axis=int(axis), reduction=reduction
    )


def _scatter_nd_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    idx = _indices_arg(arg_types, 1)
    upd = tensor_arg(arg_types, 2, "updates")
    m = idx.shape[0] if idx.shape else 0
    if not isinstance(m, int):  # the number of indexed axes is known at run time only
        if upd.dtype != data.dtype:
            raise TypeRelError(f"updates must have dtype {data.dtype}, got {upd}")
        return data
    want = idx.shape[1:] + data.shape[m:]
    if (
        len(upd.shape) != len(want)
        or any(differ(a, b) for a, b in zip(upd.shape, want, strict=True))
        or upd.dtype != data.dtype
    ):
        raise TypeRelError(f"updates must be {TensorType(want, data.dtype)}, got {upd}")
    if attrs.reduction not in _REDUCTIONS:
        raise TypeRelError(f"reduction must be one of {', '.join(_REDUCTIONS)}")
    return data


def _scatter_nd_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, idx, upd = ins[0], np.moveaxis(ins[1], 0, -1), ins[2]
    m = idx.shape[-1]
    out = data.copy()
    flat = idx.reshape(-1, m)
    where = tuple(_wrap(flat[:, k], data.shape[k]) for k in range(m))
    _reduce_into(out, where, upd.reshape((-1, *data.shape[m:])), attrs.reduction)
    return out


define_op(
    "scatter_nd",
    num_inputs=3,
    attrs={"reduction": "update"},
    attrs_type_key="relay.attrs.ScatterNDAttrs",
    type_rel=_scatter_nd_rel,
    compute=_scatter_nd_kernel,
    pattern=OpPattern.OPAQUE,
    doc="A copy of data with slices replaced (or reduced) at index tuples (TVM's layout).",
)


def scatter_nd(data: Expr, indices: Expr, updates: Expr, reduction: str = "update") -> Call:
    """``data`` with the slices at the index tuples ``indices[:, y]`` (tuples along the
    *first* axis, as in TVM; ``updates`` is ``(Y..., data.shape[M:])``) set to, or
    combined by ``reduction`` with, ``updates``."""
    return make_call("scatter_nd", [data, indices, updates], reduction=reduction)


# -- cumsum, cumprod ------------------------------------------------------------------------------


def _cum_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if attrs.axis is None:
        shape: tuple[int, ...] = (int(np.prod(data.shape, dtype=np.int64)),)
    else:
        normalize_axis(attrs.axis, data.ndim, "cumulative axis")
        shape = data.shape
    return TensorType(shape, resolve_dtype(attrs.dtype, data.dtype, "dtype"))


def _cum_kernel(fn: Any, identity: int) -> Any:
    def compute(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = ins[0]
        dtype = check_dtype(attrs.dtype) if attrs.dtype else x.dtype
        if attrs.axis is None:
            x, axis = x.reshape(-1), 0
        else:
            axis = attrs.axis % x.ndim
        out = fn(x, axis=axis, dtype=dtype)
        if attrs.exclusive:
            pad = [(0, 0)] * x.ndim
            pad[axis] = (1, 0)
            out = np.pad(out, pad, constant_values=identity)
            out = np.delete(out, -1, axis=axis) if out.shape[axis] else out
        return num.as_out(out, dtype)

    return compute


for _name, _fn, _identity in (("cumsum", np.cumsum, 0), ("cumprod", np.cumprod, 1)):
    define_op(
        _name,
        num_inputs=1,
        attrs={"axis": None, "dtype": "", "exclusive": False},
        attrs_type_key="relay.attrs.ScanopAttrs",
        type_rel=_cum_rel,
        compute=_cum_kernel(_fn, _identity),
        pattern=OpPattern.OPAQUE,
        doc=f"Cumulative {_name[3:]} along an axis (flattened when axis is None).",
    )


def cumsum(data: Expr, axis: int | None = None, dtype: str = "", exclusive: bool = False) -> Call:
    """Running sums along ``axis``; ``exclusive`` leaves out the current element."""
    return make_call(
        "cumsum",
        [data],
        axis=None if axis is None else int(axis),
        dtype=check_dtype(dtype) if dtype else "",
        exclusive=bool(exclusive),
    )


def cumprod(data: Expr, axis: int | None = None, dtype: str = "", exclusive: bool = False) -> Call:
    """Running products along ``axis``; ``exclusive`` leaves out the current element."""
    return make_call(
        "cumprod",
        [data],
        axis=None if axis is None else int(axis),
        dtype=check_dtype(dtype) if dtype else "",
        exclusive=bool(exclusive),
    )


# -- topk -----------------------------------------------------------------------------------------


def _stable_order(x: np.ndarray, axis: int, ascend: bool) -> np.ndarray:
    """Indices sorting ``x`` along ``axis``; equal values keep their order (lower index
    first), ascending or descending."""
    if ascend:
        return np.argsort(x, axis=axis, kind="stable")
    if x.dtype.kind == "f":
        key = -x
    elif x.dtype.kind == "u":
        key = -(x.astype(np.float64)) if x.dtype.itemsize >= 8 else -(x.astype(np.int64))
    else:
        key = -(x.astype(np.int64))
    return np.argsort(key, axis=axis, kind="stable")


def _topk_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    axis = normalize_axis(attrs.axis, data.ndim, "topk axis")
    k = int(attrs.k)
    dim = data.shape[axis]
    if k >= 1 and static(dim) and k > int(dim):
        raise TypeRelError(f"topk k={k} is out of range for axis {axis} of {data}")
    shape = list(data.shape)
    shape[axis] = k if k >= 1 else dim  # k < 1: every element, sorted
    values = TensorType(shape, data.dtype)
    indices = TensorType(shape, resolve_dtype(attrs.dtype, "int32", "dtype"))
    if attrs.ret_type == "values":
        return values
    if attrs.ret_type == "indices":
        return indices
    return TupleType([values, indices])


def _topk_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> Any:
    x = ins[0]
    axis = attrs.axis % x.ndim
    k = int(attrs.k)
    if k < 1 or k > x.shape[axis]:
        k = x.shape[axis]
    order = _stable_order(x, axis, bool(attrs.is_ascend))
    idx = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(x, idx, axis=axis)
    indices = idx.astype(check_dtype(attrs.dtype or "int32"))
    if attrs.ret_type == "values":
        return values
    if attrs.ret_type == "indices":
        return indices
    return values, indices


define_op(
    "topk",
    num_inputs=1,
    attrs={"k": 1, "axis": -1, "ret_type": "both", "is_ascend": False, "dtype": "int32"},
    attrs_type_key="relay.attrs.TopKAttrs",
    type_rel=_topk_rel,
    compute=_topk_kernel,
    pattern=OpPattern.OPAQUE,
    doc="The k largest (or smallest) values along an axis and their indices.",
)


def topk(
    data: Expr,
    k: int = 1,
    axis: int = -1,
    ret_type: str = "both",
    is_ascend: bool = False,
    dtype: str = "int32",
) -> Any:
    """The ``k`` largest values along ``axis`` (smallest with ``is_ascend``) and their
    indices; ties keep the lower index first. ``ret_type="both"`` gives a 2-tuple.
    An expression ``k`` (a run-time scalar) builds ``dyn.topk``."""
    k = static_value(k)
    if isinstance(k, Expr):
        call = make_call(
            "dyn.topk",
            [data, k],
            axis=int(axis),
            ret_type=ret_type,
            is_ascend=bool(is_ascend),
            dtype=check_dtype(dtype),
        )
        return TupleWrapper(call, 2) if ret_type == "both" else call
    call = make_call(
        "topk",
        [data],
        k=int(k),
        axis=int(axis),
        ret_type=ret_type,
        is_ascend=bool(is_ascend),
        dtype=check_dtype(dtype),
    )
    return TupleWrapper(call, 2) if ret_type == "both" else call


del _name, _fn, _identity


# -- strided_set: a write into a strided slice -----------------------------------------------------


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


# -- sort, argsort ---------------------------------------------------------------------------------


def _sort_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    normalize_axis(attrs.axis, data.ndim, "sort axis")
    return data


def _argsort_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    normalize_axis(attrs.axis, data.ndim, "argsort axis")
    return TensorType(data.shape, resolve_dtype(attrs.dtype, "int32", "dtype"))


def _sort_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = ins[0]
    axis = normalize_axis(attrs.axis, x.ndim, "sort axis")
    return np.take_along_axis(x, _stable_order(x, axis, bool(attrs.is_ascend)), axis=axis)


def _argsort_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = ins[0]
    axis = normalize_axis(attrs.axis, x.ndim, "argsort axis")
    order = _stable_order(x, axis, bool(attrs.is_ascend))
    return order.astype(check_dtype(attrs.dtype or "int32"))


_SORT_ATTRS = {"axis": -1, "is_ascend": True, "dtype": "int32"}

define_op(
    "sort",
    num_inputs=1,
    attrs=_SORT_ATTRS,
    attrs_type_key="relay.attrs.ArgsortAttrs",
    type_rel=_sort_rel,
    compute=_sort_kernel,
    pattern=OpPattern.OPAQUE,
    doc="The values sorted along an axis (stable).",
)

define_op(
    "argsort",
    num_inputs=1,
    attrs=_SORT_ATTRS,
    attrs_type_key="relay.attrs.ArgsortAttrs",
    type_rel=_argsort_rel,
    compute=_argsort_kernel,
    pattern=OpPattern.OPAQUE,
    doc="The indices that sort the values along an axis (stable).",
)


def sort(data: Expr, axis: int = -1, is_ascend: bool = True) -> Call:
    """``data`` sorted along ``axis`` (descending unless ``is_ascend``).

    >>> from relaykit import relay
    >>> sort(relay.var("x", shape=(2, 3)), is_ascend=False).attrs.is_ascend
    False
    """
    return make_call("sort", [data], axis=int(axis), is_ascend=bool(is_ascend))


def argsort(data: Expr, axis: int = -1, is_ascend: bool = True, dtype: str = "int32") -> Call:
    """The indices that sort ``data`` along ``axis``; equal values keep their order.

    >>> from relaykit import relay
    >>> argsort(relay.var("x", shape=(3,)), dtype="int64").attrs.dtype
    'int64'
    """
    return make_call(
        "argsort", [data], axis=int(axis), is_ascend=bool(is_ascend), dtype=check_dtype(dtype)
    )


# -- searchsorted ----------------------------------------------------------------------------------


def _searchsorted_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    seq = tensor_arg(arg_types, 0, "sorted_sequence")
    values = tensor_arg(arg_types, 1, "values")
    if seq.ndim == 0:
        raise TypeRelError("searchsorted: sorted_sequence must have at least one dimension")
    if seq.ndim > 1:
        if seq.ndim != values.ndim:
            raise TypeRelError(
                "searchsorted: a sorted_sequence of more than one dimension must have the "
                f"rank of values, got {seq} and {values}"
            )
        for i, (a, b) in enumerate(zip(seq.shape[:-1], values.shape[:-1], strict=True)):
            if static(a, b) and int(a) != int(b):
                raise TypeRelError(
                    f"searchsorted: dimension {i} of sorted_sequence ({a}) and values ({b}) differ"
                )
    if seq.dtype != values.dtype:
        raise TypeRelError(
            f"searchsorted: sorted_sequence and values must have one dtype, got {seq} and {values}"
        )
    return TensorType(values.shape, resolve_dtype(attrs.dtype, "int32", "dtype"))


def _searchsorted_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    seq, values = ins
    side: Literal["left", "right"] = "right" if attrs.right else "left"
    out_dtype = check_dtype(attrs.dtype or "int32")
    if seq.ndim == 1:
        return np.searchsorted(seq, values, side=side).astype(out_dtype)
    rows = seq.reshape(-1, seq.shape[-1])
    vals = values.reshape(rows.shape[0], -1)
    out = np.stack([np.searchsorted(r, v, side=side) for r, v in zip(rows, vals, strict=True)])
    return out.reshape(values.shape).astype(out_dtype)


define_op(
    "searchsorted",
    num_inputs=2,
    attrs={"right": False, "dtype": "int32"},
    attrs_type_key="relay.attrs.SearchSortedAttrs",
    type_rel=_searchsorted_rel,
    compute=_searchsorted_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Where values would be inserted into sorted_sequence (last axis) to keep it sorted.",
)


def searchsorted(
    sorted_sequence: Expr, values: Expr, right: bool = False, dtype: str = "int32"
) -> Call:
    """For each of ``values``, the index in the last axis of ``sorted_sequence`` where it
    would be inserted to keep it sorted: the first such index, or the last with ``right``.
    A 1-D ``sorted_sequence`` serves every value; else its leading axes match ``values``'.

    >>> from relaykit import relay
    >>> s, v = relay.var("s", shape=(5,)), relay.var("v", shape=(2, 3))
    >>> searchsorted(s, v, right=True).attrs.right
    True
    """
    return make_call(
        "searchsorted", [sorted_sequence, values], right=bool(right), dtype=check_dtype(dtype)
    )
