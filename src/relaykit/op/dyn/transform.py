"""Dynamic twins of the transform operators: ``dyn.reshape``, ``dyn.broadcast_to``,
``dyn.tile``, ``dyn.strided_slice``, ``dyn.expand_dims`` and ``dyn.squeeze`` (run-time
shapes, reps, bounds and axes); ONNX's slices, splits, pads and expands with run-time
extents (``dyn.slice_axes``, ``dyn.split``, ``dyn.unsqueeze``, ``dyn.expand``,
``dyn.pad_axes``, ``dyn.center_crop_pad``); the data-dependent selections
``dyn.compress`` and ``dyn.unique``; and ``dyn.as_dynamic``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op._relations import INT_DTYPES, normalize_axis, tensor_arg
from relaykit.op.define import TypeRelError, make_call

from ._base import define_dyn_op, ints, shape_input, unknown

__all__ = [
    "as_dynamic",
    "broadcast_to",
    "center_crop_pad",
    "compress",
    "expand",
    "expand_dims",
    "pad_axes",
    "reshape",
    "slice_axes",
    "split",
    "squeeze",
    "strided_slice",
    "tile",
    "unique",
    "unique_ref",
    "unsqueeze",
]


# -- reshape, broadcast_to, tile ------------------------------------------------------------------


def _reshape_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(unknown(shape_input(arg_types, 1, "newshape")), data.dtype)


define_dyn_op(
    "dyn.reshape",
    2,
    _reshape_rel,
    static="reshape",
    convert=lambda v, a: ([v[0]], {"newshape": ints(v[1]), "allowzero": bool(a.allowzero)}),
    attrs={"allowzero": False},
    value_inputs=(1,),
)


def reshape(data: Expr, newshape: Expr, allowzero: bool = False) -> Call:
    """``data`` reshaped to the run-time shape ``newshape`` (1-D int tensor), with
    reshape's special values (0 copies, -1 infers)."""
    return make_call("dyn.reshape", [data, newshape], allowzero=bool(allowzero))


def _broadcast_to_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(unknown(shape_input(arg_types, 1, "shape")), data.dtype)


define_dyn_op(
    "dyn.broadcast_to",
    2,
    _broadcast_to_rel,
    static="broadcast_to",
    convert=lambda v, a: ([v[0]], {"shape": ints(v[1])}),
    value_inputs=(1,),
)


def broadcast_to(data: Expr, shape: Expr) -> Call:
    """``data`` broadcast to the run-time ``shape``."""
    return make_call("dyn.broadcast_to", [data, shape])


def _tile_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    reps = tensor_arg(arg_types, 1, "reps")
    if reps.ndim != 1 or not isinstance(reps.shape[0], int):
        raise TypeRelError(f"reps must be a 1-D tensor of static length, got {reps}")
    # TVM accepts reps of any numeric dtype (float reps are truncated to integers)
    return TensorType(unknown(max(data.ndim, reps.shape[0])), data.dtype)


define_dyn_op(
    "dyn.tile",
    2,
    _tile_rel,
    static="tile",
    convert=lambda v, a: ([v[0]], {"reps": ints(v[1])}),
    value_inputs=(1,),
)


def tile(data: Expr, reps: Expr) -> Call:
    """``data`` repeated ``reps`` times per axis (run-time ``reps``)."""
    return make_call("dyn.tile", [data, reps])


# -- strided_slice --------------------------------------------------------------------------------


def _strided_slice_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    for i, what in ((1, "begin"), (2, "end"), (3, "strides")):
        shape_input(arg_types, i, what)
    return TensorType(unknown(data.ndim), data.dtype)


def _slice_attrs(v: Sequence[Any], a: Attrs) -> tuple[list[Any], dict[str, Any]]:
    return [v[0]], {
        "begin": ints(v[1]),
        "end": ints(v[2]),
        "strides": ints(v[3]),
        "slice_mode": a.slice_mode,
        "axes": None,
    }


define_dyn_op(
    "dyn.strided_slice",
    4,
    _strided_slice_rel,
    static="strided_slice",
    convert=_slice_attrs,
    attrs={"slice_mode": "end"},
    value_inputs=(1, 2, 3),
)


def strided_slice(
    data: Expr, begin: Expr, end: Expr, strides: Expr, slice_mode: str = "end"
) -> Call:
    """A strided slice whose ``begin``, ``end`` and ``strides`` are run-time vectors."""
    return make_call("dyn.strided_slice", [data, begin, end, strides], slice_mode=slice_mode)


# -- expand_dims, squeeze -------------------------------------------------------------------------


def _expand_dims_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    axis = tensor_arg(arg_types, 1, "axis")
    if axis.ndim != 0 or axis.dtype not in INT_DTYPES:
        raise TypeRelError(f"axis must be an integer scalar, got {axis}")
    return TensorType(unknown(data.ndim + int(attrs.num_newaxis)), data.dtype)


define_dyn_op(
    "dyn.expand_dims",
    2,
    _expand_dims_rel,
    static="expand_dims",
    convert=lambda v, a: ([v[0]], {"axis": int(np.asarray(v[1])), "num_newaxis": a.num_newaxis}),
    attrs={"num_newaxis": 1},
    value_inputs=(1,),
)


def expand_dims(data: Expr, axis: Expr, num_newaxis: int = 1) -> Call:
    """``data`` with ``num_newaxis`` new axes at the run-time ``axis``."""
    return make_call("dyn.expand_dims", [data, axis], num_newaxis=int(num_newaxis))


def _squeeze_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n = shape_input(arg_types, 1, "axis")
    if n > data.ndim:
        raise TypeRelError(f"cannot squeeze {n} axes of {data}")
    return TensorType(unknown(data.ndim - n), data.dtype)


define_dyn_op(
    "dyn.squeeze",
    2,
    _squeeze_rel,
    static="squeeze",
    convert=lambda v, a: ([v[0]], {"axis": ints(v[1])}),
    value_inputs=(1,),
)


def squeeze(data: Expr, axis: Expr) -> Call:
    """``data`` without the run-time list of size-1 ``axis``."""
    return make_call("dyn.squeeze", [data, axis])


# -- ONNX slices, splits and expands --------------------------------------------------------------


def _slice_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n = shape_input(arg_types, 1, "starts")
    for i, what in ((2, "ends"), (3, "axes"), (4, "steps")):
        m = shape_input(arg_types, i, what)
        if m not in (0, n) or (i == 2 and m != n):
            raise TypeRelError(f"{what} has {m} values, starts {n}")
    return TensorType(unknown(data.ndim), data.dtype)


def _slice_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = np.asarray(ins[0])
    starts, ends = ints(ins[1]), ints(ins[2])
    axes = ints(ins[3]) or tuple(range(len(starts)))
    steps = ints(ins[4]) or (1,) * len(starts)
    index: list[slice] = [slice(None)] * x.ndim
    for s, e, a, k in zip(starts, ends, axes, steps, strict=True):
        if k == 0:
            raise TypeRelError("a slice step is 0")
        index[normalize_axis(a, x.ndim, "slice axis")] = slice(s, e, k)
    return np.ascontiguousarray(x[tuple(index)])


define_dyn_op(
    "dyn.slice_axes",
    5,
    _slice_rel,
    kernel=_slice_kernel,
    doc="ONNX Slice: run-time starts, ends, axes (empty: the leading ones) and steps "
    "(empty: ones), clamped to each axis as NumPy's slicing clamps.",
)


def slice_axes(data: Expr, starts: Expr, ends: Expr, axes: Expr, steps: Expr) -> Call:
    """``data[starts:ends:steps]`` along ``axes`` (all run-time 1-D integer tensors)."""
    return make_call("dyn.slice_axes", [data, starts, ends, axes, steps])


def _split_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n = shape_input(arg_types, 1, "sizes")
    axis = normalize_axis(attrs.axis, data.ndim, "split axis")
    shape = list(data.shape)
    shape[axis] = AnyDim()
    return TupleType([TensorType(shape, data.dtype) for _ in range(n)])


def _split_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    x = np.asarray(ins[0])
    sizes = ints(ins[1])
    axis = normalize_axis(attrs.axis, x.ndim, "split axis")
    if min(sizes, default=0) < 0 or sum(sizes) != x.shape[axis]:
        raise TypeRelError(f"split sizes {sizes} do not add up to dimension {x.shape[axis]}")
    cuts = np.cumsum(sizes)[:-1]
    return tuple(np.ascontiguousarray(p) for p in np.split(x, cuts, axis=axis))


define_dyn_op(
    "dyn.split",
    2,
    _split_rel,
    kernel=_split_kernel,
    attrs={"axis": 0},
    doc="Split along axis into parts of the run-time sizes (a tuple, one part per size).",
)


def split(data: Expr, sizes: Expr, axis: int = 0) -> Call:
    """``data`` split along ``axis`` into parts of the run-time ``sizes``."""
    return make_call("dyn.split", [data, sizes], axis=int(axis))


def _unsqueeze_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(unknown(data.ndim + shape_input(arg_types, 1, "axes")), data.dtype)


def _unsqueeze_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = np.asarray(ins[0])
    axes = ints(ins[1])
    n = x.ndim + len(axes)
    norm = sorted(normalize_axis(a, n, "unsqueeze axis") for a in axes)
    if len(set(norm)) != len(norm):
        raise TypeRelError(f"axes {axes} name an axis twice")
    return np.expand_dims(x, tuple(norm)).copy()


define_dyn_op(
    "dyn.unsqueeze",
    2,
    _unsqueeze_rel,
    kernel=_unsqueeze_kernel,
    doc="New size-1 axes at the run-time positions axes (of the result).",
)


def unsqueeze(data: Expr, axes: Expr) -> Call:
    """``data`` with size-1 axes inserted at the run-time ``axes``."""
    return make_call("dyn.unsqueeze", [data, axes])


def _expand_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(unknown(max(data.ndim, shape_input(arg_types, 1, "shape"))), data.dtype)


define_dyn_op(
    "dyn.expand",
    2,
    _expand_rel,
    kernel=lambda ins, attrs: np.ascontiguousarray(
        np.broadcast_to(ins[0], np.broadcast_shapes(np.shape(ins[0]), ints(ins[1])))
    ),
    doc="Broadcast data and a run-time shape together (ONNX Expand: either side may be 1).",
)


def expand(data: Expr, shape: Expr) -> Call:
    """``data`` broadcast with the run-time ``shape`` (bidirectionally)."""
    return make_call("dyn.expand", [data, shape])


# -- pad and center crop --------------------------------------------------------------------------


def _pad_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n = shape_input(arg_types, 1, "pads")
    k = shape_input(arg_types, 3, "axes")
    if n != 2 * (k or data.ndim):
        raise TypeRelError(f"pads has {n} values, expected {2 * (k or data.ndim)}")
    return TensorType(unknown(data.ndim), data.dtype)


def _pad_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = np.asarray(ins[0])
    pads = ints(ins[1])
    value = np.asarray(ins[2]).reshape(-1)
    axes = [normalize_axis(a, x.ndim, "pad axis") for a in ints(ins[3])] or list(range(x.ndim))
    k = len(axes)
    width = [[0, 0] for _ in range(x.ndim)]
    for j, a in enumerate(axes):
        width[a] = [pads[j], pads[j + k]]
    grow = [(max(b, 0), max(e, 0)) for b, e in width]
    mode = attrs.pad_mode
    if mode == "constant":
        fill = value[0] if value.size else 0
        out = np.pad(x, grow, mode="constant", constant_values=fill)
    else:
        out = np.pad(x, grow, mode=mode)
    index = tuple(slice(max(-b, 0), out.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(width))
    return np.ascontiguousarray(out[index])


define_dyn_op(
    "dyn.pad_axes",
    4,
    _pad_rel,
    kernel=_pad_kernel,
    attrs={"pad_mode": "constant"},
    doc="ONNX Pad: run-time pads (all begins, then all ends) over axes (empty: all); a "
    "negative pad crops; modes constant (the run-time value), reflect, edge and wrap.",
)


def pad_axes(data: Expr, pads: Expr, value: Expr, axes: Expr, pad_mode: str = "constant") -> Call:
    """``data`` padded by the run-time ``pads`` along ``axes`` (ONNX ``Pad``)."""
    return make_call("dyn.pad_axes", [data, pads, value, axes], pad_mode=pad_mode)


def _center_crop_pad_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = np.asarray(ins[0])
    target = ints(ins[1])
    axes = [normalize_axis(a, x.ndim, "axis") for a in attrs.axes] or list(range(x.ndim))
    out = x
    for a, t in zip(axes, target, strict=True):
        d = out.shape[a]
        if t < d:
            start = (d - t) // 2
            out = np.take(out, np.arange(start, start + t), axis=a)
        elif t > d:
            before = (t - d) // 2
            width = [(0, 0)] * x.ndim
            width[a] = (before, t - d - before)
            out = np.pad(out, width)
    return np.ascontiguousarray(out)


def _center_crop_pad_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    shape_input(arg_types, 1, "shape")
    return TensorType(unknown(data.ndim), data.dtype)


define_dyn_op(
    "dyn.center_crop_pad",
    2,
    _center_crop_pad_rel,
    kernel=_center_crop_pad_kernel,
    attrs={"axes": ()},
    doc="ONNX CenterCropPad: crop or zero-pad around the centre to a run-time shape.",
)


def center_crop_pad(data: Expr, shape: Expr, axes: Sequence[int] = ()) -> Call:
    """``data`` cropped or padded around its centre to the run-time ``shape``."""
    return make_call("dyn.center_crop_pad", [data, shape], axes=tuple(int(a) for a in axes))


# -- data-dependent selections --------------------------------------------------------------------


def _compress_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    tensor_arg(arg_types, 1, "condition")
    if attrs.axis is None:
        return TensorType((AnyDim(),), data.dtype)
    axis = normalize_axis(attrs.axis, data.ndim, "compress axis")
    shape = list(data.shape)
    shape[axis] = AnyDim()
    return TensorType(shape, data.dtype)


def _compress_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = np.asarray(ins[0])
    cond = np.asarray(ins[1]).astype(bool).reshape(-1)
    if attrs.axis is None:
        flat = x.reshape(-1)
        return flat[np.nonzero(cond[: flat.size])[0]].copy()
    axis = normalize_axis(attrs.axis, x.ndim, "compress axis")
    return np.take(x, np.nonzero(cond[: x.shape[axis]])[0], axis=axis)


define_dyn_op(
    "dyn.compress",
    2,
    _compress_rel,
    kernel=_compress_kernel,
    attrs={"axis": None},
    doc="The slices of data along axis (None: the flattened elements) where the run-time "
    "condition is true.",
)


def compress(data: Expr, condition: Expr, axis: int | None = None) -> Call:
    """The entries of ``data`` (along ``axis``) selected by the run-time ``condition``."""
    return make_call("dyn.compress", [data, condition], axis=None if axis is None else int(axis))


def unique_ref(
    x: np.ndarray, axis: int | None, sorted_: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """ONNX ``Unique``: the unique values (slices along ``axis``, or elements of the
    flattened tensor), the index of each one's first occurrence, the inverse indices and
    the counts. ``sorted_=False`` keeps the order of first occurrence."""
    y, first, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True, axis=axis
    )
    inverse = inverse.reshape(-1)
    if not sorted_:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y = np.take(y, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)


def _unique_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if attrs.axis is None:
        values = TensorType((AnyDim(),), data.dtype)
        n_in = int(np.prod(data.shape)) if data.is_static else AnyDim()
    else:
        axis = normalize_axis(attrs.axis, data.ndim, "unique axis")
        shape = list(data.shape)
        n_in = shape[axis]
        shape[axis] = AnyDim()
        values = TensorType(shape, data.dtype)
    idx = TensorType((AnyDim(),), "int64")
    return TupleType([values, idx, TensorType((n_in,), "int64"), idx])


def _unique_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    x = np.asarray(ins[0])
    axis = None if attrs.axis is None else normalize_axis(attrs.axis, x.ndim, "unique axis")
    return tuple(np.ascontiguousarray(v) for v in unique_ref(x, axis, bool(attrs.sorted)))


define_dyn_op(
    "dyn.unique",
    1,
    _unique_rel,
    kernel=_unique_kernel,
    attrs={"axis": None, "sorted": True},
    doc="ONNX Unique: unique values, first indices, inverse indices and counts.",
)


def unique(data: Expr, axis: int | None = None, sorted_: bool = True) -> Call:
    """``(values, first_indices, inverse_indices, counts)`` of ``data`` (ONNX ``Unique``)."""
    return make_call(
        "dyn.unique", [data], axis=None if axis is None else int(axis), sorted=bool(sorted_)
    )


# -- a tensor whose sizes are only known at run time ----------------------------------------------


def _as_dynamic_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(unknown(data.ndim), data.dtype)


define_dyn_op(
    "dyn.as_dynamic",
    1,
    _as_dynamic_rel,
    kernel=lambda ins, attrs: np.array(ins[0], copy=True),
    doc="The identity, typed with every dimension ? (values of different sizes that must "
    "share one type: the branches of an If). Never folded to a static shape.",
)


def as_dynamic(data: Expr) -> Call:
    """``data`` typed with ``?`` dimensions (its rank and dtype kept)."""
    return make_call("dyn.as_dynamic", [data])
