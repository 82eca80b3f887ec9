"""Slices, splits, pads, expands and selections whose extents are run-time values, and
the data-dependent selections ONNX models use (``Compress``, ``Unique``), plus
``dyn.matmul`` (broadcasting over ``?`` dims), ``dyn.dropout`` and ``dyn.as_dynamic``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op._relations import normalize_axis, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

from ._base import define_kernel_op, ints, shape_input, unknown

__all__ = [
    "as_dynamic",
    "center_crop_pad",
    "compress",
    "dropout",
    "dropout_ref",
    "expand",
    "matmul",
    "pad_axes",
    "slice_axes",
    "split",
    "unique",
    "unique_ref",
    "unsqueeze",
]


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


define_kernel_op(
    "dyn.slice_axes",
    5,
    _slice_rel,
    _slice_kernel,
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


define_kernel_op(
    "dyn.split",
    2,
    _split_rel,
    _split_kernel,
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


define_kernel_op(
    "dyn.unsqueeze",
    2,
    _unsqueeze_rel,
    _unsqueeze_kernel,
    doc="New size-1 axes at the run-time positions axes (of the result).",
)


def unsqueeze(data: Expr, axes: Expr) -> Call:
    """``data`` with size-1 axes inserted at the run-time ``axes``."""
    return make_call("dyn.unsqueeze", [data, axes])


def _expand_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(unknown(max(data.ndim, shape_input(arg_types, 1, "shape"))), data.dtype)


define_kernel_op(
    "dyn.expand",
    2,
    _expand_rel,
    lambda ins, attrs: np.ascontiguousarray(
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


define_kernel_op(
    "dyn.pad_axes",
    4,
    _pad_rel,
    _pad_kernel,
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


define_kernel_op(
    "dyn.center_crop_pad",
    2,
    _center_crop_pad_rel,
    _center_crop_pad_kernel,
    attrs={"axes": ()},
    doc="ONNX CenterCropPad: crop or zero-pad around the centre to a run-time shape.",
)


def center_crop_pad(data: Expr, shape: Expr, axes: Sequence[int] = ()) -> Call:
    """``data`` cropped or padded around its centre to the run-time ``shape``."""
    return make_call("dyn.center_crop_pad", [data, shape], axes=tuple(int(a) for a in axes))


# -- resize ---------------------------------------------------------------------------------------


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


define_kernel_op(
    "dyn.compress",
    2,
    _compress_rel,
    _compress_kernel,
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


define_kernel_op(
    "dyn.unique",
    1,
    _unique_rel,
    _unique_kernel,
    attrs={"axis": None, "sorted": True},
    doc="ONNX Unique: unique values, first indices, inverse indices and counts.",
)


def unique(data: Expr, axis: int | None = None, sorted_: bool = True) -> Call:
    """``(values, first_indices, inverse_indices, counts)`` of ``data`` (ONNX ``Unique``)."""
    return make_call(
        "dyn.unique", [data], axis=None if axis is None else int(axis), sorted=bool(sorted_)
    )


def dropout_ref(
    x: np.ndarray, ratio: float, training: bool, seed: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """ONNX ``Dropout``: in training mode with a nonzero ratio, keep each element with
    probability 1 - ratio (scaled by 1 / (1 - ratio)); the mask draws
    ``RandomState(seed).uniform`` as ONNX's reference does. Otherwise the identity."""
    if ratio == 0 or not training:
        return x.copy(), np.ones(x.shape, dtype=bool)
    mask = np.random.RandomState(seed).uniform(0, 1.0, x.shape) >= ratio
    return (mask * x / (1.0 - ratio)).astype(x.dtype), mask


def _dropout_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    x = tensor_arg(arg_types, 0, "data")
    tensor_arg(arg_types, 1, "ratio")
    tensor_arg(arg_types, 2, "training_mode")
    return TupleType([x, TensorType(x.shape, "bool")])


define_op(
    "dyn.dropout",
    num_inputs=3,
    attrs={"seed": None},
    type_rel=_dropout_rel,
    compute=lambda ins, attrs: dropout_ref(
        np.asarray(ins[0]),
        float(np.asarray(ins[1]).reshape(-1)[0]),
        bool(np.asarray(ins[2]).reshape(-1)[0]),
        None if attrs.seed is None else int(attrs.seed),
    ),
    pattern=OpPattern.OPAQUE,
    doc="ONNX Dropout with a run-time ratio and training mode: (output, mask).",
)


def dropout(data: Expr, ratio: Expr, training_mode: Expr, seed: int | None = None) -> Call:
    """ONNX ``Dropout`` with run-time ``ratio`` and ``training_mode``: ``(out, mask)``."""
    return make_call(
        "dyn.dropout", [data, ratio, training_mode], seed=None if seed is None else int(seed)
    )


# -- matmul over ? dimensions ---------------------------------------------------------------------


def _broadcast_dim(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:
        if a != b and 1 not in (a, b):
            raise TypeRelError(f"cannot broadcast dimensions {a} and {b}")
        return max(a, b) if 1 in (a, b) else a
    if a == 1:
        return b
    if b == 1:
        return a
    return a if type(a) is int else b if type(b) is int else AnyDim()


def _matmul_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    a = tensor_arg(arg_types, 0, "a")
    b = tensor_arg(arg_types, 1, "b")
    if not a.ndim or not b.ndim:
        raise TypeRelError(f"matmul needs inputs of rank >= 1, got {a} and {b}")
    sa = (1, *a.shape) if a.ndim == 1 else a.shape
    sb = (*b.shape, 1) if b.ndim == 1 else b.shape
    k1, k2 = sa[-1], sb[-2]
    if type(k1) is int and type(k2) is int and k1 != k2:
        raise TypeRelError(f"cannot multiply {a.shape} by {b.shape}: inner dimensions differ")
    la, lb = sa[:-2], sb[:-2]
    n = max(len(la), len(lb))
    la = (1,) * (n - len(la)) + tuple(la)
    lb = (1,) * (n - len(lb)) + tuple(lb)
    batch = tuple(_broadcast_dim(x, y) for x, y in zip(la, lb, strict=True))
    out = (*batch, sa[-2], sb[-1])
    if a.ndim == 1:
        out = out[:-2] + out[-1:]
    if b.ndim == 1:
        out = out[:-1]
    return TensorType(out, a.dtype)


define_kernel_op(
    "dyn.matmul",
    2,
    _matmul_rel,
    lambda ins, attrs: np.ascontiguousarray(np.matmul(ins[0], ins[1])),
    doc="NumPy matmul (batch broadcasting, 1-D operands) over ? dimensions.",
)


def matmul(a: Expr, b: Expr) -> Call:
    """NumPy ``matmul`` of ``a`` and ``b``, whose dimensions may be ``?``."""
    return make_call("dyn.matmul", [a, b])


# -- a tensor whose sizes are only known at run time ----------------------------------------------


def _as_dynamic_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(unknown(data.ndim), data.dtype)


define_kernel_op(
    "dyn.as_dynamic",
    1,
    _as_dynamic_rel,
    lambda ins, attrs: np.array(ins[0], copy=True),
    doc="The identity, typed with every dimension ? (values of different sizes that must "
    "share one type: the branches of an If). Never folded to a static shape.",
)


def as_dynamic(data: Expr) -> Call:
    """``data`` typed with ``?`` dimensions (its rank and dtype kept)."""
    return make_call("dyn.as_dynamic", [data])
