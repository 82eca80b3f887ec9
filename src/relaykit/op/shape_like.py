"""Shape-following and generating operators: ``reshape_like``, ``collapse_sum_like``,
``collapse_sum_to``, ``broadcast_to_like``, ``meshgrid``, ``trilu``,
``reverse_sequence`` and ``sliding_window`` (TVM's ``relay`` names and attributes).

The ``*_like`` operators take their target shape from a second tensor; the
collapsing sums undo a broadcast (they are what gradients of broadcasting
operators need).

>>> from relaykit import relay
>>> x, y = relay.var("x", shape=(2, 3)), relay.var("y", shape=(3, 2))
>>> reshape_like(x, y).op.name
'reshape_like'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant, Expr, Tuple, TupleWrapper
from relaykit.ir.types import TensorType, TupleType, Type

from ._relations import (
    INT_DTYPES,
    broadcast_shape,
    normalize_axis,
    static,
    tensor_arg,
    tuple_arg,
)
from .define import OpPattern, TypeRelError, define_op, int_tuple, make_call
from .transform import infer_reshape

__all__ = [
    "reshape_like",
    "collapse_sum_like",
    "collapse_sum_to",
    "broadcast_to_like",
    "slice_like",
    "meshgrid",
    "trilu",
    "reverse_sequence",
    "sliding_window",
    "reverse_reshape",
]

_I = OpPattern.INJECTIVE


# -- reshape_like ----------------------------------------------------------------------------------


def _span(ndim: int, begin: int, end: int | None) -> tuple[int, int]:
    b = begin + ndim if begin < 0 else begin
    e = ndim if end is None else (end + ndim if end < 0 else end)
    if not 0 <= b <= e <= ndim:
        raise TypeRelError(f"dimension range [{begin}, {end}) is not valid for rank {ndim}")
    return b, e


def _reshape_like_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    like = tensor_arg(arg_types, 1, "shape_like")
    lb, le = _span(data.ndim, attrs.lhs_begin, attrs.lhs_end)
    rb, re = _span(like.ndim, attrs.rhs_begin, attrs.rhs_end)
    shape = data.shape[:lb] + like.shape[rb:re] + data.shape[le:]
    if static(*shape, *data.shape) and int(np.prod(shape, dtype=np.int64)) != int(
        np.prod(data.shape, dtype=np.int64)
    ):  # with symbolic or ? dims the sizes are checked at run time
        raise TypeRelError(f"reshape_like cannot reshape {data} to shape {shape}")
    return TensorType(shape, data.dtype)


def _reshape_like_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, like = ins
    lb, le = _span(data.ndim, attrs.lhs_begin, attrs.lhs_end)
    rb, re = _span(like.ndim, attrs.rhs_begin, attrs.rhs_end)
    return data.reshape(data.shape[:lb] + like.shape[rb:re] + data.shape[le:])


define_op(
    "reshape_like",
    num_inputs=2,
    attrs={"lhs_begin": 0, "lhs_end": None, "rhs_begin": 0, "rhs_end": None},
    attrs_type_key="relay.attrs.ReshapeLikeAttrs",
    type_rel=_reshape_like_rel,
    compute=_reshape_like_kernel,
    pattern=_I,
    doc="data reshaped to (part of) the shape of shape_like.",
)


def reshape_like(
    data: Expr,
    shape_like: Expr,
    lhs_begin: int = 0,
    lhs_end: int | None = None,
    rhs_begin: int = 0,
    rhs_end: int | None = None,
) -> Call:
    """``data`` with dimensions ``[lhs_begin, lhs_end)`` replaced by ``shape_like``'s
    dimensions ``[rhs_begin, rhs_end)`` (the whole shapes by default)."""
    return make_call(
        "reshape_like",
        [data, shape_like],
        lhs_begin=int(lhs_begin),
        lhs_end=None if lhs_end is None else int(lhs_end),
        rhs_begin=int(rhs_begin),
        rhs_end=None if rhs_end is None else int(rhs_end),
    )


# -- collapse_sum / broadcast_to_like --------------------------------------------------------------


def _collapse(data: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``data`` over the axes a broadcast from ``shape`` would have expanded."""
    lead = data.ndim - len(shape)
    out = data.sum(axis=tuple(range(lead))) if lead else data
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and out.shape[i] != 1)
    if axes:
        out = out.sum(axis=axes, keepdims=True)
    return out.reshape(shape)


def _check_collapsible(data: TensorType, shape: tuple[int, ...]) -> None:
    if len(shape) > data.ndim or broadcast_shape(shape, data.shape) != data.shape:
        raise TypeRelError(f"{data} is not a broadcast of shape {shape}; it cannot be summed to it")


def _collapse_like_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    like = tensor_arg(arg_types, 1, "collapse_type")
    _check_collapsible(data, like.shape)
    return TensorType(like.shape, data.dtype)


define_op(
    "collapse_sum_like",
    num_inputs=2,
    type_rel=_collapse_like_rel,
    compute=lambda ins, attrs: _collapse(ins[0], ins[1].shape).astype(ins[0].dtype),
    pattern=OpPattern.COMM_REDUCE,
    doc="data summed down to the shape of collapse_type (undoes a broadcast).",
)


def collapse_sum_like(data: Expr, collapse_type: Expr) -> Call:
    """``data`` summed over the axes that broadcasting ``collapse_type`` to it added."""
    return make_call("collapse_sum_like", [data, collapse_type])


def _collapse_to_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    shape = tuple(attrs.shape)
    _check_collapsible(data, shape)
    return TensorType(shape, data.dtype)


define_op(
    "collapse_sum_to",
    num_inputs=1,
    attrs={"shape": ()},
    type_rel=_collapse_to_rel,
    compute=lambda ins, attrs: _collapse(ins[0], tuple(attrs.shape)).astype(ins[0].dtype),
    pattern=OpPattern.COMM_REDUCE,
    doc="data summed down to shape (undoes a broadcast).",
)


def collapse_sum_to(data: Expr, shape: Any) -> Call:
    """``data`` summed down to the static ``shape`` it was broadcast from."""
    if isinstance(shape, Expr):
        if type(shape) is not Constant:
            raise ArgumentError("collapse_sum_to needs a static shape (a list or a constant)")
        shape = shape.data.numpy().tolist()
    return make_call("collapse_sum_to", [data], shape=tuple(int(d) for d in shape))


def _broadcast_like_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    like = tensor_arg(arg_types, 1, "broadcast_type")
    _check_collapsible(like, data.shape)
    return TensorType(like.shape, data.dtype)


define_op(
    "broadcast_to_like",
    num_inputs=2,
    type_rel=_broadcast_like_rel,
    compute=lambda ins, attrs: np.ascontiguousarray(np.broadcast_to(ins[0], ins[1].shape)),
    pattern=OpPattern.BROADCAST,
    doc="data broadcast to the shape of broadcast_type.",
)


def broadcast_to_like(data: Expr, broadcast_type: Expr) -> Call:
    """``data`` broadcast (NumPy rules) to the shape of ``broadcast_type``."""
    return make_call("broadcast_to_like", [data, broadcast_type])


# -- slice_like -----------------------------------------------------------------------------------


def _slice_like_axes(ndim: int, like_ndim: int, axes: Any) -> tuple[int, ...]:
    """The axes of ``data`` that ``slice_like`` cuts to ``shape_like``'s extent."""
    if axes is None:
        return tuple(range(min(ndim, like_ndim)))
    out = []
    for a in axes:
        ax = normalize_axis(a, ndim, "slice_like axis")
        if ax >= like_ndim:
            raise TypeRelError(
                f"slice_like axis {a} is out of range for shape_like of rank {like_ndim}"
            )
        out.append(ax)
    return tuple(out)


def _slice_like_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    like = tensor_arg(arg_types, 1, "shape_like")
    shape = list(data.shape)
    for ax in _slice_like_axes(data.ndim, like.ndim, attrs.axes):
        end = like.shape[ax]
        if static(end, shape[ax]) and int(end) > int(shape[ax]):
            raise TypeRelError(
                f"slice_like: shape_like's axis {ax} ({end}) is longer than data's ({shape[ax]})"
            )
        shape[ax] = end
    return TensorType(tuple(shape), data.dtype)


def _slice_like_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, like = ins
    index = [slice(None)] * data.ndim
    for ax in _slice_like_axes(data.ndim, like.ndim, attrs.axes):
        index[ax] = slice(0, like.shape[ax])
    return np.ascontiguousarray(data[tuple(index)])


define_op(
    "slice_like",
    num_inputs=2,
    attrs={"axes": None},
    attrs_type_key="relay.attrs.SliceLikeAttrs",
    type_rel=_slice_like_rel,
    compute=_slice_like_kernel,
    pattern=_I,
    doc="data cut, from the start, to the extent of shape_like on some axes.",
)


def slice_like(data: Expr, shape_like: Expr, axes: Any = None) -> Call:
    """``data`` cut from index 0 to the extent of ``shape_like`` on ``axes`` (default: the
    leading axes both have).

    >>> from relaykit import relay
    >>> x, y = relay.var("x", shape=(4, 5)), relay.var("y", shape=(2, 3))
    >>> slice_like(x, y, axes=[1]).attrs.axes
    [1]
    """
    ax = None if axes is None else int_tuple(axes, "axes")
    return make_call("slice_like", [data, shape_like], axes=ax)


# -- meshgrid --------------------------------------------------------------------------------------


def _meshgrid_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    tt = tuple_arg(arg_types, 0, "data")
    sizes = []
    dtypes = []
    for f in tt.fields:
        if not isinstance(f, TensorType) or f.ndim > 1:
            raise TypeRelError(f"meshgrid inputs must be scalars or 1-D tensors, got {f}")
        sizes.append(f.shape[0] if f.ndim else 1)
        dtypes.append(f.dtype)
    if attrs.indexing not in ("ij", "xy"):
        raise TypeRelError(f"meshgrid indexing must be 'ij' or 'xy', got {attrs.indexing!r}")
    if attrs.indexing == "xy" and len(sizes) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    return TupleType([TensorType(tuple(sizes), d) for d in dtypes])


define_op(
    "meshgrid",
    num_inputs=1,
    attrs={"indexing": "ij"},
    attrs_type_key="relay.attrs.MeshgridAttrs",
    type_rel=_meshgrid_rel,
    compute=lambda ins, attrs: tuple(
        np.ascontiguousarray(a)
        for a in np.meshgrid(*[np.atleast_1d(x) for x in ins[0]], indexing=attrs.indexing)
    ),
    pattern=_I,
    doc="Coordinate grids from 1-D (or scalar) inputs, as numpy.meshgrid.",
)


def meshgrid(data: Any, indexing: str = "ij") -> TupleWrapper:
    """Coordinate grids of the 1-D tensors in ``data`` (``"ij"`` or ``"xy"`` indexing)."""
    from_list = list(data.fields) if hasattr(data, "fields") else list(data)
    call = make_call("meshgrid", [Tuple(from_list)], indexing=str(indexing))
    return TupleWrapper(call, len(from_list))


# -- trilu -----------------------------------------------------------------------------------------


def _trilu_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    k = tensor_arg(arg_types, 1, "k")
    if data.ndim < 2:
        raise TypeRelError(f"trilu needs a tensor of rank >= 2, got {data}")
    if k.ndim != 0 or k.dtype not in INT_DTYPES:
        raise TypeRelError(f"trilu k must be an integer scalar, got {k}")
    return data


def _trilu_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, k = ins[0], int(ins[1])
    return np.triu(data, k) if attrs.upper else np.tril(data, k)


define_op(
    "trilu",
    num_inputs=2,
    attrs={"upper": True},
    attrs_type_key="relay.attrs.TriluAttrs",
    type_rel=_trilu_rel,
    compute=_trilu_kernel,
    pattern=_I,
    doc="The upper (or lower) triangle of the last two axes, from diagonal k on.",
)


def _as_const(v: Any, dtype: str) -> Expr:
    return v if isinstance(v, Expr) else Constant(np.array(v, dtype=dtype))


def trilu(data: Expr, k: Any, upper: bool = True) -> Call:
    """Keep the upper triangle (``upper=True``, from diagonal ``k`` up) or the lower one
    of the last two axes of ``data``; zero the rest (``numpy.triu`` / ``numpy.tril``)."""
    return make_call("trilu", [data, _as_const(k, "int32")], upper=bool(upper))


# -- reverse_sequence ------------------------------------------------------------------------------


def _reverse_sequence_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    lengths = tensor_arg(arg_types, 1, "seq_lengths")
    seq = normalize_axis(attrs.seq_axis, data.ndim, "seq_axis")
    batch = normalize_axis(attrs.batch_axis, data.ndim, "batch_axis")
    if seq == batch:
        raise TypeRelError("reverse_sequence seq_axis and batch_axis must differ")
    if lengths.ndim != 1 or lengths.dtype not in INT_DTYPES:
        raise TypeRelError(f"seq_lengths must be a 1-D integer tensor, got {lengths}")
    if lengths.shape[0] != data.shape[batch]:
        raise TypeRelError(
            f"seq_lengths has {lengths.shape[0]} entries but the batch axis has {data.shape[batch]}"
        )
    return data


def _reverse_sequence_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, lengths = ins
    seq = attrs.seq_axis % data.ndim
    batch = attrs.batch_axis % data.ndim
    out = data.copy()
    for b, n in enumerate(lengths.astype(np.int64)):
        n = int(min(max(n, 1), data.shape[seq]))
        src = [slice(None)] * data.ndim
        src[batch] = b  # type: ignore[call-overload]
        src[seq] = slice(0, n)
        dst_view = out[tuple(src)]
        rev_axis = seq - (1 if batch < seq else 0)
        dst_view[...] = np.flip(data[tuple(src)], axis=rev_axis)
    return out


define_op(
    "reverse_sequence",
    num_inputs=2,
    attrs={"seq_axis": 1, "batch_axis": 0},
    attrs_type_key="relay.attrs.ReverseSequenceAttrs",
    type_rel=_reverse_sequence_rel,
    compute=_reverse_sequence_kernel,
    pattern=_I,
    doc="Reverse the first seq_lengths[b] elements along seq_axis of each batch entry b.",
)


def reverse_sequence(data: Expr, seq_lengths: Expr, seq_axis: int = 1, batch_axis: int = 0) -> Call:
    """For every ``b`` along ``batch_axis``, reverse the first ``seq_lengths[b]`` elements
    along ``seq_axis``."""
    return make_call(
        "reverse_sequence",
        [data, seq_lengths],
        seq_axis=int(seq_axis),
        batch_axis=int(batch_axis),
    )


# -- sliding_window --------------------------------------------------------------------------------


def _sliding_window_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    axis = normalize_axis(attrs.axis, data.ndim, "sliding_window axis")
    window, strides = tuple(attrs.window_shape), tuple(attrs.strides)
    if len(window) != data.ndim - axis or len(strides) != len(window):
        raise TypeRelError(
            f"sliding_window: window_shape {window} and strides {strides} must each have "
            f"{data.ndim - axis} entries (the axes from {axis} on)"
        )
    if any(w > d for w, d in zip(window, data.shape[axis:], strict=True)) or min(strides) < 1:
        raise TypeRelError(f"window {window} with strides {strides} does not fit {data}")
    counts = tuple(
        (d - w) // st + 1 for d, w, st in zip(data.shape[axis:], window, strides, strict=True)
    )
    return TensorType(data.shape[:axis] + counts + window, data.dtype)


def _sliding_window_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data = ins[0]
    axis = attrs.axis % data.ndim
    window = tuple(attrs.window_shape)
    view = np.lib.stride_tricks.sliding_window_view(
        data, window, axis=tuple(range(axis, data.ndim))
    )
    steps = tuple(slice(None, None, s) for s in attrs.strides)
    return np.ascontiguousarray(view[(slice(None),) * axis + steps])


define_op(
    "sliding_window",
    num_inputs=1,
    attrs={"axis": 0, "window_shape": (), "strides": ()},
    attrs_type_key="relay.attrs.SlidingWindowAttrs",
    type_rel=_sliding_window_rel,
    compute=_sliding_window_kernel,
    pattern=_I,
    doc="Every window of window_shape over the axes from axis on, at the given strides.",
)


def sliding_window(data: Expr, axis: int, window_shape: Any, strides: Any) -> Call:
    """The windows of ``window_shape`` over the axes of ``data`` from ``axis`` on, taken at
    ``strides``: the result has shape ``data.shape[:axis] + counts + window_shape``."""
    return make_call(
        "sliding_window",
        [data],
        axis=int(axis),
        window_shape=tuple(int(w) for w in window_shape),
        strides=tuple(int(s) for s in strides),
    )


# -- reverse_reshape -------------------------------------------------------------------------------


def _reverse_reshape_shape(shape: Sequence[Any], newshape: Sequence[int]) -> tuple[Any, ...]:
    """``reshape``'s special values read from the right: both shapes reversed, the usual
    inference, and the result reversed back."""
    if -4 in newshape:
        raise TypeRelError(f"reverse_reshape does not support -4 (splitting), got {newshape}")
    return tuple(reversed(infer_reshape(tuple(reversed(shape)), tuple(reversed(newshape)))))


def _reverse_reshape_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(_reverse_reshape_shape(data.shape, attrs.newshape), data.dtype)


define_op(
    "contrib_reverse_reshape",
    num_inputs=1,
    attrs={"newshape": None, "allowzero": False},
    attrs_type_key="relay.attrs.ReshapeAttrs",
    type_rel=_reverse_reshape_rel,
    compute=lambda ins, attrs: ins[0].reshape(_reverse_reshape_shape(ins[0].shape, attrs.newshape)),
    pattern=_I,
    doc="reshape whose special values (0, -1, -2, -3) are matched from the right.",
)


def reverse_reshape(data: Expr, newshape: Any) -> Call:
    """``reshape`` with its special values matched from the right: ``(10, 5, 4)`` with
    ``(-1, 0)`` becomes ``(50, 4)``, where ``reshape`` would give ``(40, 5)``."""
    return make_call("contrib_reverse_reshape", [data], newshape=int_tuple(newshape, "newshape"))
