"""Sparse-tensor and segment operators with TVM's ``relay`` names:
``sparse_to_dense``, ``sparse_reshape``, ``sparse_fill_empty_rows``, ``segment_sum``,
``unravel_index``, ``unique``, ``adv_index`` and ``fixed_point_multiply``.

A sparse tensor in COO form is a pair (``indices``: one row of coordinates per
stored value, ``values``). ``segment_sum`` and ``unique`` have output sizes known
only from input values when no static bound is given: their outputs carry ``?``
dims and data-dependent shape functions (the VM runs them).

>>> import numpy as np
>>> from relaykit import relay
>>> i = relay.var("i", shape=(4,), dtype="int64")
>>> s = relay.var("s", shape=(2,), dtype="int64")
>>> relay.create_executor("debug").evaluate(relay.Function([i, s], unravel_index(i, s)))(
...     np.array([0, 1, 2, 3]), np.array([2, 2])).numpy().tolist()
[[0, 0, 1, 1], [0, 1, 0, 1]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, Tuple, TupleWrapper, const
from relaykit.ir.types import AnyDim, TensorType, TupleType, Type

from ._relations import INT_DTYPES, broadcast_shape, static, static_value, tensor_arg
from .define import OpPattern, TypeRelError, define_op, make_call
from .shape_func import define_shape_func

__all__ = [
    "sparse_to_dense",
    "sparse_reshape",
    "sparse_fill_empty_rows",
    "segment_sum",
    "unravel_index",
    "unique",
    "adv_index",
    "fixed_point_multiply",
]


def _int_arg(arg_types: Sequence[Type], i: int, name: str) -> TensorType:
    t = tensor_arg(arg_types, i, name)
    if t.dtype not in INT_DTYPES:
        raise TypeRelError(f"{name} must be an integer tensor, got {t}")
    return t


# -- sparse_to_dense ------------------------------------------------------------------------------


def _sparse_to_dense_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    idx = _int_arg(arg_types, 0, "sparse_indices")
    values = tensor_arg(arg_types, 1, "sparse_values")
    default = tensor_arg(arg_types, 2, "default_value")
    if idx.ndim > 2:
        raise TypeRelError(f"sparse_indices must have rank 0, 1 or 2, got {idx}")
    if values.ndim > 1:
        raise TypeRelError(f"sparse_values must have rank 0 or 1, got {values}")
    if default.ndim != 0:
        raise TypeRelError(f"default_value must be a scalar, got {default}")
    return TensorType(tuple(attrs.output_shape), values.dtype)


def _sparse_to_dense_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    idx, values, default = ins
    shape = tuple(int(d) for d in attrs.output_shape)
    out = np.full(shape, default, dtype=values.dtype)
    rows = idx.reshape(-1, 1) if idx.ndim < 2 else idx
    vals = np.broadcast_to(values, (rows.shape[0],))
    out[tuple(rows.T.astype(np.int64))] = vals
    return out


define_op(
    "sparse_to_dense",
    num_inputs=3,
    attrs={"output_shape": ()},
    attrs_type_key="relay.attrs.SparseToDenseAttrs",
    type_rel=_sparse_to_dense_rel,
    compute=_sparse_to_dense_kernel,
    pattern=OpPattern.OPAQUE,
    doc="A dense tensor of output_shape: sparse_values at sparse_indices, default elsewhere.",
)


def sparse_to_dense(
    sparse_indices: Expr,
    output_shape: Any,
    sparse_values: Expr,
    default_value: Expr | float | None = None,
) -> Call:
    """The dense tensor of ``output_shape`` holding ``sparse_values`` at
    ``sparse_indices`` (a scalar, a vector of positions in a 1-D output, or one row of
    coordinates per value) and ``default_value`` (0 when omitted) elsewhere."""
    shape = static_value(output_shape)
    if default_value is None:
        default_value = 0
    if not isinstance(default_value, Expr):
        default_value = const(default_value)
    if isinstance(shape, Expr):  # a run-time shape: dyn.sparse_to_dense
        return make_call(
            "dyn.sparse_to_dense", [sparse_indices, shape, sparse_values, default_value]
        )
    if isinstance(shape, int | np.integer):
        shape = [shape]
    return make_call(
        "sparse_to_dense",
        [sparse_indices, sparse_values, default_value],
        output_shape=tuple(int(d) for d in shape),
    )


# -- sparse_reshape -------------------------------------------------------------------------------


def _sparse_reshape_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    idx = _int_arg(arg_types, 0, "sparse_indices")
    prev = _int_arg(arg_types, 1, "prev_shape")
    new = _int_arg(arg_types, 2, "new_shape")
    if idx.ndim != 2 or prev.ndim != 1 or new.ndim != 1:
        raise TypeRelError(
            f"sparse_reshape takes 2-D sparse_indices and 1-D shapes, got {idx}, {prev}, {new}"
        )
    return TupleType(
        [TensorType((idx.shape[0], new.shape[0]), idx.dtype), TensorType(new.shape, new.dtype)]
    )


def _resolve_shape(prev: np.ndarray, new: np.ndarray) -> np.ndarray:
    total = int(np.prod(prev, dtype=np.int64))
    out = new.astype(np.int64).copy()
    unknown = np.flatnonzero(out == -1)
    if len(unknown) > 1:
        raise ArgumentError(f"sparse_reshape: new_shape {new.tolist()} has more than one -1")
    known = int(np.prod(out[out != -1], dtype=np.int64))
    if len(unknown) == 1:
        out[unknown[0]] = total // known if known else 0
    if int(np.prod(out, dtype=np.int64)) != total:
        raise ArgumentError(
            f"sparse_reshape: cannot reshape a sparse tensor of shape {prev.tolist()} "
            f"({total} elements) to {new.tolist()}"
        )
    return out


def _strides(shape: Sequence[int]) -> np.ndarray:
    """Row-major strides of ``shape``, in elements."""
    out = np.ones((len(shape),), dtype=np.int64)
    for i in range(len(shape) - 2, -1, -1):
        out[i] = out[i + 1] * int(shape[i + 1])
    return out


def _sparse_reshape_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    idx, prev, new = ins
    shape = _resolve_shape(prev, new)
    if np.array_equal(shape, prev):  # the same shape: the coordinates are kept as given
        return idx.copy(), shape.astype(new.dtype)
    # coordinates are not bounds-checked (as TVM): each goes through the row-major offset
    flat = idx.astype(np.int64) @ _strides(prev.tolist())
    rows = np.empty((idx.shape[0], shape.size), dtype=np.int64)
    for k, stride in enumerate(_strides(shape.tolist())):
        rows[:, k], flat = np.divmod(flat, stride)
    return rows.astype(idx.dtype), shape.astype(new.dtype)


define_op(
    "sparse_reshape",
    num_inputs=3,
    type_rel=_sparse_reshape_rel,
    compute=_sparse_reshape_kernel,
    pattern=OpPattern.OPAQUE,
    num_outputs=2,
    doc="The coordinates of a COO sparse tensor reshaped from prev_shape to new_shape.",
)


def sparse_reshape(sparse_indices: Expr, prev_shape: Expr, new_shape: Expr) -> TupleWrapper:
    """``(new_indices, new_shape)``: the coordinates of a COO sparse tensor of
    ``prev_shape`` in a tensor of ``new_shape`` (which may hold one ``-1``)."""
    call = make_call("sparse_reshape", [sparse_indices, prev_shape, new_shape])
    return TupleWrapper(call, 2)


# -- sparse_fill_empty_rows -----------------------------------------------------------------------


def _fill_rows_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    idx = _int_arg(arg_types, 0, "sparse_indices")
    values = tensor_arg(arg_types, 1, "sparse_values")
    dense = _int_arg(arg_types, 2, "dense_shape")
    default = tensor_arg(arg_types, 3, "default_value")
    if idx.ndim != 2 or values.ndim != 1 or dense.ndim != 1:
        raise TypeRelError(
            "sparse_fill_empty_rows takes 2-D sparse_indices, 1-D sparse_values and a 1-D "
            f"dense_shape, got {idx}, {values}, {dense}"
        )
    if default.ndim > 1 or (
        default.ndim == 1 and static(default.shape[0]) and default.shape[0] != 1
    ):
        raise TypeRelError(f"default_value must hold one value (shape () or (1,)), got {default}")
    if default.dtype != values.dtype:
        raise TypeRelError(f"default_value {default} must have the dtype of sparse_values {values}")
    # the number of stored entries after filling, and the number of rows, are run-time values
    return TupleType(
        [
            TensorType((AnyDim(), idx.shape[1]), idx.dtype),
            TensorType((AnyDim(),), values.dtype),
            TensorType((AnyDim(),), "bool"),
        ]
    )


def _fill_rows_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    idx, values, dense, default = ins
    num_rows = int(np.asarray(dense).reshape(-1)[0])
    rows = idx[:, 0].astype(np.int64)
    if rows.size and (rows.min() < 0 or rows.max() >= num_rows):
        raise ArgumentError(
            f"sparse_fill_empty_rows: a row index of sparse_indices is outside [0, {num_rows})"
        )
    empty = np.ones((num_rows,), dtype=bool)
    empty[rows] = False
    empty_rows = np.flatnonzero(empty)
    filler = np.zeros((empty_rows.size, idx.shape[1]), dtype=idx.dtype)
    filler[:, 0] = empty_rows
    all_idx = np.concatenate([idx, filler])
    fill_value = np.asarray(default).reshape(-1)[0]
    all_values = np.concatenate([values, np.full((empty_rows.size,), fill_value, values.dtype)])
    # rows are sorted in sparse_indices (as TensorFlow's op requires): each filler row goes
    # before the first stored entry of a later row
    order = np.argsort(np.concatenate([rows, empty_rows]), kind="stable")
    return all_idx[order], all_values[order], empty


define_op(
    "sparse_fill_empty_rows",
    num_inputs=4,
    type_rel=_fill_rows_rel,
    compute=_fill_rows_kernel,
    pattern=OpPattern.OPAQUE,
    num_outputs=3,
    doc="A row-sorted COO tensor with an entry (default_value at column 0) in each empty row.",
)


@define_shape_func("sparse_fill_empty_rows", data_dependent=True)
def _fill_rows_shape(attrs: Attrs, inputs: Sequence[Any]) -> list[tuple[int, ...]]:
    outs = _fill_rows_kernel([np.asarray(a) for a in inputs], attrs)
    return [tuple(o.shape) for o in outs]


def sparse_fill_empty_rows(
    sparse_indices: Expr, sparse_values: Expr, dense_shape: Expr, default_value: Expr
) -> TupleWrapper:
    """``(new_indices, new_values, empty_row_indicator)``: the COO sparse tensor
    (``sparse_indices`` sorted by row) of ``dense_shape`` with one entry added in each row
    that has none, at column 0 and holding ``default_value``; ``empty_row_indicator[r]``
    says whether row ``r`` was empty.

    >>> import numpy as np
    >>> from relaykit import relay
    >>> i = relay.var("i", shape=(2, 2), dtype="int64")
    >>> v = relay.var("v", shape=(2,), dtype="int64")
    >>> s = relay.var("s", shape=(2,), dtype="int64")
    >>> d = relay.var("d", shape=(1,), dtype="int64")
    >>> f = relay.Function([i, v, s, d], sparse_fill_empty_rows(i, v, s, d).astuple())
    >>> out = relay.create_executor("vm").evaluate(f)(
    ...     np.array([[0, 1], [2, 0]]), np.array([5, 6]), np.array([3, 2]), np.array([9]))
    >>> out[0].numpy().tolist(), out[1].numpy().tolist(), out[2].numpy().tolist()
    ([[0, 1], [1, 0], [2, 0]], [5, 9, 6], [False, True, False])
    """
    call = make_call(
        "sparse_fill_empty_rows", [sparse_indices, sparse_values, dense_shape, default_value]
    )
    return TupleWrapper(call, 3)


# -- segment_sum ----------------------------------------------------------------------------------


def _segment_sum_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    ids = _int_arg(arg_types, 1, "segment_ids")
    if data.ndim < 1 or ids.ndim != 1:
        raise TypeRelError(f"segment_sum takes data of rank >= 1 and 1-D segment_ids, got {ids}")
    if static(data.shape[0], ids.shape[0]) and data.shape[0] < ids.shape[0]:
        raise TypeRelError(f"segment_ids {ids} has more entries than data {data} has rows")
    n = attrs.num_segments
    return TensorType((AnyDim() if n is None else int(n), *data.shape[1:]), data.dtype)


def _num_segments(ids: np.ndarray, attrs: Attrs) -> int:
    if attrs.num_segments is not None:
        return int(attrs.num_segments)
    return int(ids.max()) + 1 if ids.size else 0


def _segment_sum_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, ids = ins
    out = np.zeros((_num_segments(ids, attrs), *data.shape[1:]), dtype=data.dtype)
    np.add.at(out, ids.astype(np.int64), data[: ids.shape[0]])
    return out


define_op(
    "segment_sum",
    num_inputs=2,
    attrs={"num_segments": None},
    type_rel=_segment_sum_rel,
    compute=_segment_sum_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Rows of data summed per segment id (num_segments rows, or max id + 1).",
)


@define_shape_func("segment_sum", data_dependent=True)
def _segment_sum_shape(attrs: Attrs, inputs: Sequence[Any]) -> list[tuple[int, ...]]:
    data, ids = (np.asarray(a) for a in inputs)
    return [(_num_segments(ids, attrs), *data.shape[1:])]


def segment_sum(data: Expr, segment_ids: Expr, num_segments: int | None = None) -> Call:
    """``out[s] = sum of data[i] where segment_ids[i] == s``; the output has
    ``num_segments`` rows, or ``max(segment_ids) + 1`` (known at run time) when omitted."""
    n = static_value(num_segments)
    if isinstance(n, Expr):
        raise ArgumentError("segment_sum needs num_segments as an integer or None")
    return make_call("segment_sum", [data, segment_ids], num_segments=None if not n else int(n))


# -- unravel_index --------------------------------------------------------------------------------


def _unravel_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    idx = _int_arg(arg_types, 0, "indices")
    shape = _int_arg(arg_types, 1, "shape")
    if idx.ndim > 1 or shape.ndim != 1:
        raise TypeRelError(f"unravel_index takes 0-D or 1-D indices and a 1-D shape, got {idx}")
    return TensorType((shape.shape[0], *idx.shape), idx.dtype)


def _unravel_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    idx, shape = ins
    dims = tuple(int(d) for d in shape)
    # TVM does not check bounds: an index past the end wraps in the first dimension
    flat = np.asarray(idx, dtype=np.int64)
    coords = [flat // s for s in _strides(dims)]
    coords[1:] = [c % d for c, d in zip(coords[1:], dims[1:], strict=True)]
    return np.stack(coords).astype(idx.dtype) if coords else np.zeros((0, *idx.shape), idx.dtype)


define_op(
    "unravel_index",
    num_inputs=2,
    type_rel=_unravel_rel,
    compute=_unravel_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="The coordinates of flat indices in a tensor of the given shape, one row per axis.",
)


def unravel_index(indices: Expr, shape: Expr) -> Call:
    """The coordinates (one row per axis of ``shape``) of the flat ``indices``."""
    return make_call("unravel_index", [indices, shape])


# -- unique ---------------------------------------------------------------------------------------


def _unique_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.ndim != 1:
        raise TypeRelError(f"unique takes a 1-D tensor, got {data}")
    n = data.shape[0]
    fields = [
        TensorType((n,), data.dtype),
        TensorType((n,), "int32"),
        TensorType((n,), "int32"),
        TensorType((1,), "int32"),
    ]
    if attrs.return_counts:
        fields.append(TensorType((n,), "int32"))
    return TupleType(fields)


def _unique_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    (data,) = ins
    uniq, first, inverse, counts = np.unique(
        data, return_index=True, return_inverse=True, return_counts=True
    )
    if not attrs.sorted:  # order of first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        uniq, first, counts, inverse = uniq[order], first[order], counts[order], rank[inverse]
    n, k = data.shape[0], uniq.shape[0]

    def padded(a: np.ndarray, dtype: Any) -> np.ndarray:
        out = np.zeros((n,), dtype=dtype)
        out[:k] = a
        return out

    outs = [
        padded(uniq, data.dtype),
        padded(first, np.int32),
        inverse.reshape(-1).astype(np.int32),
        np.array([k], dtype=np.int32),
    ]
    if attrs.return_counts:
        outs.append(padded(counts, np.int32))
    return tuple(outs)


define_op(
    "unique",
    num_inputs=1,
    attrs={"sorted": True, "return_counts": False},
    attrs_type_key="relay.attrs.UniqueAttrs",
    type_rel=_unique_rel,
    compute=_unique_kernel,
    pattern=OpPattern.OPAQUE,
    num_outputs=5,
    doc="The distinct values of a 1-D tensor (padded to its length) with their indices.",
)


def unique(data: Expr, is_sorted: bool = True, return_counts: bool = False) -> TupleWrapper:
    """``(unique, indices, inverse_indices, num_unique[, counts])`` of a 1-D tensor, each
    padded to the input's length: the first ``num_unique`` entries hold the distinct values
    (ascending when ``is_sorted``, else in order of first occurrence), the index of each
    one's first occurrence and its count; ``inverse_indices[i]`` is the position of
    ``data[i]`` among them."""
    call = make_call("unique", [data], sorted=bool(is_sorted), return_counts=bool(return_counts))
    return TupleWrapper(call, 5 if return_counts else 4)


# -- adv_index ------------------------------------------------------------------------------------


def _adv_index_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    if len(arg_types) == 1 and isinstance(arg_types[0], TupleType):
        arg_types = arg_types[0].fields
    data = tensor_arg(arg_types, 0, "data")
    indices = [_int_arg(arg_types, i, "index") for i in range(1, len(arg_types))]
    if len(indices) > data.ndim:
        raise TypeRelError(f"adv_index: {len(indices)} index tensors for data {data}")
    shape: tuple[Any, ...] = ()
    for t in indices:
        shape = broadcast_shape(shape, t.shape)
    return TensorType((*shape, *data.shape[len(indices) :]), data.dtype)


def _adv_index_kernel(ins: Sequence[Any], attrs: Attrs) -> np.ndarray:
    items = list(ins[0]) if len(ins) == 1 and isinstance(ins[0], tuple | list) else list(ins)
    data, *indices = (np.asarray(a) for a in items)
    return data[tuple(i.astype(np.int64) for i in indices)]


define_op(
    "adv_index",
    num_inputs=1,
    type_rel=_adv_index_rel,
    compute=_adv_index_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="NumPy advanced indexing: data[index_0, index_1, ...] with broadcast index tensors.",
)


def adv_index(inputs: Sequence[Expr] | Expr) -> Call:
    """``data[index_0, index_1, ...]`` (NumPy advanced indexing) for
    ``inputs = [data, index_0, index_1, ...]``."""
    tup = inputs if isinstance(inputs, Expr) else Tuple(list(inputs))
    return make_call("adv_index", [tup])


# -- fixed_point_multiply -------------------------------------------------------------------------


def _fpm_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in INT_DTYPES:
        raise TypeRelError(f"fixed_point_multiply takes an integer tensor, got {data}")
    return data


def _fpm_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    (data,) = ins
    x = data.astype(np.int64) * int(attrs.multiplier)
    shift = 31 - int(attrs.shift)  # x * m * 2**(shift - 31), rounded half up
    if shift > 0:
        x = (x + (np.int64(1) << np.int64(shift - 1))) >> np.int64(shift)
    elif shift < 0:
        x = x << np.int64(-shift)
    return x.astype(data.dtype)


define_op(
    "fixed_point_multiply",
    num_inputs=1,
    attrs={"multiplier": 1 << 30, "shift": 1},
    attrs_type_key="relay.attrs.FixedPointMultiplyAttrs",
    type_rel=_fpm_rel,
    compute=_fpm_kernel,
    pattern=OpPattern.ELEMWISE,
    doc="x * multiplier * 2**(shift - 31) in integer arithmetic, rounded half up.",
)


def fixed_point_multiply(data: Expr, multiplier: int, shift: int) -> Call:
    """``data`` times the fixed-point number ``multiplier * 2**(shift - 31)`` (a Q31
    mantissa and a power-of-two exponent), in integer arithmetic rounded half up."""
    return make_call("fixed_point_multiply", [data], multiplier=int(multiplier), shift=int(shift))
