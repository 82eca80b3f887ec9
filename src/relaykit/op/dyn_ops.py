"""More dynamic operators: reductions with run-time axes, slices, splits, pads and
resizes whose extents are run-time tensors, and the data-dependent operators ONNX
models use (non-zero selection, unique values, non-max suppression).

They complete :mod:`relaykit.op.dyn` for the ONNX importer, which builds them when an
axis list, a pad amount, a count or a size is only known at run time. Each has a type
relation (``?`` where the value decides a size; the rank from the static length of the
shape-like input), a NumPy reference kernel and a data-dependent shape function
(``FShapeFunc`` with ``TShapeDataDependent=True``). Those with a static twin
(``dyn.sum`` -> ``sum``, ``dyn.image.resize`` -> ``image.resize``) fold back to it in
``DynamicToStatic`` when their value inputs are constants.

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 3))
>>> axes = relay.var("axes", shape=(1,), dtype="int64")
>>> f = relay.Function([x, axes], sum_(x, axes, keepdims=False))
>>> out = relay.create_executor("debug").evaluate(f)(np.ones((2, 3), "float32"), np.array([1]))
>>> out.numpy().tolist()
[3.0, 3.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.op import default_registry
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op._relations import INT_DTYPES, normalize_axis, resolve_dtype, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call
from relaykit.op.dyn._base import define_dyn_op, ints, shape_input, unknown
from relaykit.op.shape_func import define_shape_func
from relaykit.tir import Any as AnyDim

__all__ = [
    "REDUCTIONS",
    "affine_grid",
    "as_dynamic",
    "affine_grid_ref",
    "col2im",
    "col2im_ref",
    "dft",
    "dft_ref",
    "dropout",
    "dropout_ref",
    "matmul",
    "stft",
    "stft_ref",
    "center_crop_pad",
    "compress",
    "cumulative",
    "expand",
    "image_resize",
    "non_max_suppression",
    "non_max_suppression_ref",
    "pad_axes",
    "reduce",
    "slice_axes",
    "split",
    "sum_",
    "unique",
    "unique_ref",
    "unsqueeze",
    "window",
]

Kernel = Callable[[Sequence[np.ndarray], Attrs], Any]


def define_kernel_op(
    name: str,
    num_inputs: int,
    type_rel: Callable[[Sequence[Type], Attrs], Type],
    kernel: Kernel,
    attrs: dict[str, Any] | None = None,
    doc: str = "",
) -> None:
    """Register a dynamic operator computed by a NumPy ``kernel``; its data-dependent shape
    function runs the kernel (its output shapes are what the values make them)."""
    define_op(
        name,
        num_inputs=num_inputs,
        attrs=attrs or {},
        type_rel=type_rel,
        compute=kernel,
        pattern=OpPattern.OPAQUE,
        doc=doc,
    )

    @define_shape_func(name, data_dependent=True)
    def shape_func(call_attrs: Attrs, inputs: Sequence[Any]) -> list[tuple[int, ...]]:
        out = kernel([np.asarray(v) for v in inputs], call_attrs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [tuple(np.shape(o)) for o in outs]


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


for _name in REDUCTIONS:
    define_dyn_op(
        f"dyn.{_name}",
        _name,
        2,
        _reduce_rel,
        _reduce_convert,
        attrs={"keepdims": False, "noop_with_empty_axes": False},
        value_inputs=(1,),
        doc=f"{_name} over the axes given by a run-time 1-D integer tensor (empty: every "
        "axis, or none with noop_with_empty_axes).",
    )


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


def _kernel_shapes(kernel: Kernel) -> Callable[[Attrs, Sequence[Any]], list[tuple[int, ...]]]:
    """A data-dependent shape function that runs ``kernel``."""

    def shape_func(call_attrs: Attrs, inputs: Sequence[Any]) -> list[tuple[int, ...]]:
        return [tuple(np.shape(kernel([np.asarray(v) for v in inputs], call_attrs)))]

    return shape_func


for _name in ("max", "min"):
    _op = default_registry.get(f"dyn.{_name}")
    _op.set_attr("FCompute", _empty_safe(_name, _op.get_attr("FCompute")), 11)
    define_shape_func(f"dyn.{_name}", data_dependent=True, level=11)(
        _kernel_shapes(_op.get_attr("FCompute"))
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


def _same_type_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    return tensor_arg(arg_types, 0, "data")


def _scalar_int(arg_types: Sequence[Type], i: int, what: str) -> None:
    t = tensor_arg(arg_types, i, what)
    if t.dtype not in INT_DTYPES or t.ndim > 1 or (t.ndim == 1 and t.shape[0] != 1):
        raise TypeRelError(f"{what} must be an integer scalar, got {t}")


def _cumulative_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    _scalar_int(arg_types, 1, "axis")
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


define_kernel_op(
    "dyn.cumulative",
    2,
    _cumulative_rel,
    _cumulative_kernel,
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


# -- slice, split, unsqueeze, expand --------------------------------------------------------------


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


def _resize_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    for i, what in ((1, "roi"), (2, "scales"), (3, "sizes")):
        tensor_arg(arg_types, i, what)
    return TensorType(unknown(data.ndim), data.dtype)


def resize_sizes(
    shape: Sequence[int],
    axes: Sequence[int],
    scales: np.ndarray,
    sizes: np.ndarray,
    policy: str = "stretch",
) -> tuple[list[int], list[float]]:
    """ONNX Resize's output sizes and per-axis scales from its ``scales`` or ``sizes``."""
    r = len(shape)
    full_scales = [1.0] * r
    full_sizes = list(shape)
    if sizes.size:
        for a, s in zip(axes, sizes.reshape(-1), strict=True):
            full_sizes[a] = int(s)
        full_scales = [o / i if i else 1.0 for o, i in zip(full_sizes, shape, strict=True)]
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(full_scales[a] for a in axes)
            full_scales = [s if i in axes else 1.0 for i in range(r)]
            full_sizes = [int(s * shape[i] + 0.5) if i in axes else shape[i] for i in range(r)]
    elif scales.size:
        for a, s in zip(axes, scales.reshape(-1), strict=True):
            full_scales[a] = float(s)
        full_sizes = [int(np.floor(d * s)) for d, s in zip(shape, full_scales, strict=True)]
    else:
        raise TypeRelError("resize needs either scales or sizes")
    return full_sizes, full_scales


def _resize_convert(v: Sequence[Any], a: Attrs) -> tuple[list[Any], dict[str, Any]]:
    x = v[0]
    shape = tuple(int(d) for d in np.shape(x)) if isinstance(x, np.ndarray) else ()
    if not isinstance(x, np.ndarray):  # a fold (DynamicToStatic): the input's type knows it
        shape = tuple(int(d) for d in x.checked_type.shape)
    r = len(shape)
    axes = [normalize_axis(k, r, "resize axis") for k in a.axes] or list(range(r))
    sizes, scales = resize_sizes(
        shape, axes, np.asarray(v[2]), np.asarray(v[3]), a.keep_aspect_ratio_policy
    )
    roi = np.asarray(v[1]).reshape(-1)
    box: tuple[float, ...] = ()
    if a.coordinate_transformation_mode == "tf_crop_and_resize" and roi.size:
        lo, hi = [0.0] * r, [1.0] * r
        k = len(axes)
        for j, ax in enumerate(axes):
            lo[ax], hi[ax] = float(roi[j]), float(roi[j + k])
        box = tuple(lo + hi)
    return [x], {
        "size": tuple(sizes),
        "scales": tuple(scales),
        "roi": box,
        "method": a.method,
        "coordinate_transformation_mode": a.coordinate_transformation_mode,
        "rounding_method": a.rounding_method,
        "cubic_alpha": a.cubic_alpha,
        "cubic_exclude": a.cubic_exclude,
        "extrapolation_value": a.extrapolation_value,
        "antialias": a.antialias,
    }


define_dyn_op(
    "dyn.image.resize",
    "image.resize",
    4,
    _resize_rel,
    _resize_convert,
    attrs={
        "axes": (),
        "keep_aspect_ratio_policy": "stretch",
        "method": "linear",
        "coordinate_transformation_mode": "half_pixel",
        "rounding_method": "",
        "cubic_alpha": -0.75,
        "cubic_exclude": 0,
        "extrapolation_value": 0.0,
        "antialias": False,
    },
    value_inputs=(1, 2, 3),
    doc="N-d resize (ONNX Resize) to run-time sizes, or by run-time scales (empty sizes).",
)


def image_resize(
    data: Expr, roi: Expr, scales: Expr, sizes: Expr, **attrs: Any
) -> Call:  # pragma: no cover - thin
    """ONNX ``Resize`` of ``data`` with run-time ``roi``, ``scales`` and ``sizes`` (empty
    tensors for those not given)."""
    return make_call("dyn.image.resize", [data, roi, scales, sizes], **attrs)


# -- data-dependent: compress, unique, non-max suppression, windows --------------------------------


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


def _corners(boxes: np.ndarray, center_point_box: int) -> np.ndarray:
    """(..., 4) boxes as ``y_min, x_min, y_max, x_max``: ONNX's corner format may give
    any two opposite corners; the centre format is ``x_center, y_center, width, height``."""
    b = boxes.astype(np.float64)
    if center_point_box:
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=-1)
    y0, x0 = np.minimum(b[..., 0], b[..., 2]), np.minimum(b[..., 1], b[..., 3])
    y1, x1 = np.maximum(b[..., 0], b[..., 2]), np.maximum(b[..., 1], b[..., 3])
    return np.stack([y0, x0, y1, x1], axis=-1)


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Intersection over union of one corner-format box with each of ``others`` (0 where
    the boxes do not overlap or one is empty)."""
    ih = np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0])
    iw = np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1])
    inter = np.where((ih > 0) & (iw > 0), ih * iw, 0.0)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + areas - inter
    ok = (inter > 0) & (area > 0) & (areas > 0) & (union > 0)
    return np.where(ok, inter / np.where(ok, union, 1.0), 0.0)


def non_max_suppression_ref(
    boxes: np.ndarray,
    scores: np.ndarray,
    max_output: int,
    iou_threshold: float,
    score_threshold: float | None,
    center_point_box: int,
) -> np.ndarray:
    """ONNX ``NonMaxSuppression`` on NumPy arrays: (num_selected, 3) int64 rows of
    ``batch, class, box``. Per batch and class, boxes are taken by decreasing score (ties:
    lower index first), skipping those whose IoU with a taken box exceeds the threshold."""
    corners = _corners(boxes, center_point_box)
    rows: list[tuple[int, int, int]] = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c].astype(np.float64)
            cand = np.arange(s.shape[0])
            if score_threshold is not None:
                cand = cand[s[cand] > score_threshold]
            cand = cand[np.lexsort((cand, -s[cand]))]
            kept: list[int] = []
            for i in cand:
                if len(kept) >= max_output:
                    break
                if kept and np.any(_iou(corners[b, i], corners[b, kept]) > iou_threshold):
                    continue
                kept.append(int(i))
            rows.extend((b, c, i) for i in kept)
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


def _nms_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    boxes = tensor_arg(arg_types, 0, "boxes")
    scores = tensor_arg(arg_types, 1, "scores")
    if boxes.ndim != 3 or scores.ndim != 3:
        raise TypeRelError(f"boxes must be (B, N, 4) and scores (B, C, N), got {boxes}, {scores}")
    return TensorType((AnyDim(), 3), "int64")


def _optional_scalar(value: np.ndarray) -> Any:
    arr = np.asarray(value).reshape(-1)
    return arr[0] if arr.size else None


def _nms_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    limit = _optional_scalar(ins[2])
    iou = _optional_scalar(ins[3])
    score = _optional_scalar(ins[4]) if attrs.has_score_threshold else None
    return non_max_suppression_ref(
        np.asarray(ins[0]),
        np.asarray(ins[1]),
        max(int(limit), 0) if limit is not None else 0,
        float(iou) if iou is not None else 0.0,
        float(score) if score is not None else None,
        int(attrs.center_point_box),
    )


define_kernel_op(
    "dyn.non_max_suppression",
    5,
    _nms_rel,
    _nms_kernel,
    attrs={"center_point_box": 0, "has_score_threshold": False},
    doc="ONNX NonMaxSuppression: the selected (batch, class, box) index rows; the limit, "
    "IoU and score thresholds are run-time tensors (empty: not given).",
)


def non_max_suppression(
    boxes: Expr,
    scores: Expr,
    max_output: Expr,
    iou_threshold: Expr,
    score_threshold: Expr,
    center_point_box: int = 0,
    has_score_threshold: bool = True,
) -> Call:
    """ONNX ``NonMaxSuppression`` with run-time thresholds (rank-1 tensors, empty for
    "not given")."""
    return make_call(
        "dyn.non_max_suppression",
        [boxes, scores, max_output, iou_threshold, score_threshold],
        center_point_box=int(center_point_box),
        has_score_threshold=bool(has_score_threshold),
    )


def _window_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    _scalar_int(arg_types, 0, "size")
    return TensorType((AnyDim(),), resolve_dtype(attrs.dtype, "float32", "dtype"))


def window_ref(coeffs: Sequence[float], n: int, periodic: bool, dtype: str) -> np.ndarray:
    """The cosine-sum window ``sum_j (-1)^j a_j cos(2 pi j k / N)`` of length ``n`` (ONNX's
    Hann ``[0.5, 0.5]``, Hamming ``[25/46, 21/46]``, Blackman ``[0.42, 0.5, 0.08]``); ``N``
    is ``n`` for a periodic window, ``n - 1`` for a symmetric one."""
    denom = n if periodic else n - 1
    k = np.arange(max(n, 0), dtype=np.float64)
    w = np.zeros(k.size)
    for j, a in enumerate(coeffs):
        w = w + ((-1) ** j) * a * np.cos(2 * np.pi * j * k / max(denom, 1))
    return w.astype(dtype)


define_kernel_op(
    "dyn.window",
    1,
    _window_rel,
    lambda ins, attrs: window_ref(
        attrs.coeffs,
        int(np.asarray(ins[0]).reshape(-1)[0]),
        bool(attrs.periodic),
        attrs.dtype or "float32",
    ),
    attrs={"coeffs": (0.5, 0.5), "periodic": True, "dtype": "float32"},
    doc="A cosine-sum window (Hann, Hamming, Blackman) of a run-time length.",
)


def window(
    size: Expr, coeffs: Sequence[float], periodic: bool = True, dtype: str = "float32"
) -> Call:
    """The cosine-sum window with ``coeffs`` of the run-time ``size``."""
    return make_call(
        "dyn.window",
        [size],
        coeffs=tuple(float(c) for c in coeffs),
        periodic=bool(periodic),
        dtype=dtype,
    )


# -- signal and image ops with run-time lengths, axes and sizes ----------------------------------


def _complex_of(x: np.ndarray) -> np.ndarray:
    """A (..., 1|2) real tensor as complex values (..., ) (the last axis: real, imag), in
    the input's precision (complex64 for float32), as ONNX's reference computes."""
    if x.shape[-1] == 1:
        return x[..., 0]
    return x[..., 0] + 1j * x[..., 1]


def _real_pair(z: np.ndarray) -> np.ndarray:
    return np.stack([np.real(z), np.imag(z)], axis=-1)


def dft_ref(
    x: np.ndarray, length: int | None, axis: int, inverse: bool, onesided: bool
) -> np.ndarray:
    """ONNX ``DFT`` of a (..., 1|2) signal along ``axis`` (of the full rank): the FFT,
    its inverse (normalised by the length), one-sided forward (the first n//2 + 1 bins)
    or one-sided inverse (a real signal, last axis 1)."""
    a = axis % x.ndim
    if a == x.ndim - 1:
        raise TypeRelError("the DFT axis cannot be the last (real/imaginary) axis")
    z = _complex_of(x)
    if length is None:
        length = 2 * (x.shape[a] - 1) if inverse and onesided else x.shape[a]
    if length <= 0:
        raise TypeRelError(f"the DFT length {length} must be positive")
    if inverse and onesided:
        out = np.fft.irfft(z, n=length, axis=a)[..., None]
    elif inverse:
        out = _real_pair(np.fft.ifft(z, n=length, axis=a))
    else:
        out = _real_pair(np.fft.fft(z, n=length, axis=a))
        if onesided:
            out = np.take(out, np.arange(out.shape[a] // 2 + 1), axis=a)
    return np.ascontiguousarray(out.astype(x.dtype))


def _dft_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    x = tensor_arg(arg_types, 0, "data")
    tensor_arg(arg_types, 1, "dft_length")
    _scalar_int(arg_types, 2, "axis")
    last = 1 if attrs.inverse and attrs.onesided else 2
    return TensorType((*unknown(x.ndim - 1), last), x.dtype)


def _dft_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    length = np.asarray(ins[1]).reshape(-1)
    n = int(length[0]) if length.size else None
    axis = int(np.asarray(ins[2]).reshape(-1)[0])
    return dft_ref(np.asarray(ins[0]), n, axis, bool(attrs.inverse), bool(attrs.onesided))


define_kernel_op(
    "dyn.dft",
    3,
    _dft_rel,
    _dft_kernel,
    attrs={"inverse": False, "onesided": False},
    doc="ONNX DFT along a run-time axis with a run-time length (empty: the axis' size).",
)


def dft(
    data: Expr, length: Expr, axis: Expr, inverse: bool = False, onesided: bool = False
) -> Call:
    """ONNX ``DFT`` of ``data`` along the run-time ``axis`` (``length`` empty: the axis'
    size)."""
    return make_call(
        "dyn.dft", [data, length, axis], inverse=bool(inverse), onesided=bool(onesided)
    )


def stft_ref(
    signal: np.ndarray, step: int, window: np.ndarray | None, length: int | None, onesided: bool
) -> np.ndarray:
    """ONNX ``STFT``: frames of ``length`` (else the window's) every ``step`` samples of a
    (batch, n, 1|2) signal, windowed, each transformed: (batch, frames, bins, 2)."""
    flen = length if length is not None else (window.shape[0] if window is not None else 0)
    if step <= 0 or flen <= 0:
        raise TypeRelError(f"frame_step ({step}) and frame_length ({flen}) must be positive")
    frames = 1 + (signal.shape[1] - flen) // step
    idx = np.arange(max(frames, 0))[:, None] * step + np.arange(flen)[None, :]
    framed = signal[:, idx]  # (batch, frames, flen, comps)
    if window is not None:
        framed = framed * window.reshape(1, 1, flen, 1)
    return dft_ref(framed.astype(signal.dtype), None, 2, False, onesided)


def _stft_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    x = tensor_arg(arg_types, 0, "signal")
    return TensorType((x.shape[0], AnyDim(), AnyDim(), 2), x.dtype)


def _stft_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    window = np.asarray(ins[2]) if attrs.has_window else None
    length = np.asarray(ins[3]).reshape(-1)
    return stft_ref(
        np.asarray(ins[0]),
        int(np.asarray(ins[1]).reshape(-1)[0]),
        window,
        int(length[0]) if length.size else None,
        bool(attrs.onesided),
    )


define_kernel_op(
    "dyn.stft",
    4,
    _stft_rel,
    _stft_kernel,
    attrs={"onesided": True, "has_window": False},
    doc="ONNX STFT with a run-time frame step and frame length.",
)


def stft(
    signal: Expr, step: Expr, window: Expr, length: Expr, onesided: bool, has_window: bool
) -> Call:
    """ONNX ``STFT`` with run-time ``step`` and ``length`` (empty: the window's)."""
    return make_call(
        "dyn.stft",
        [signal, step, window, length],
        onesided=bool(onesided),
        has_window=bool(has_window),
    )


def col2im_ref(
    x: np.ndarray,
    image: Sequence[int],
    block: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
    strides: Sequence[int],
) -> np.ndarray:
    """ONNX ``Col2Im``: (N, C*prod(block), L) columns summed back into (N, C, *image)."""
    r = len(image)
    dil = tuple(dilations) or (1,) * r
    st = tuple(strides) or (1,) * r
    pd = tuple(pads) or (0,) * (2 * r)
    n, ck, length = x.shape
    k = int(np.prod(block))
    c = ck // k
    counts = [
        (image[i] + pd[i] + pd[r + i] - dil[i] * (block[i] - 1) - 1) // st[i] + 1 for i in range(r)
    ]
    if int(np.prod(counts)) != length:
        raise TypeRelError(f"input has {length} blocks, the geometry gives {np.prod(counts)}")
    cols = x.reshape(n, c, k, length)
    out = np.zeros((n, c, *image), dtype=x.dtype)
    for kk, offs in enumerate(np.ndindex(*block)):
        for ll, pos in enumerate(np.ndindex(*counts)):
            pixel = tuple(pos[i] * st[i] - pd[i] + offs[i] * dil[i] for i in range(r))
            if all(0 <= pixel[i] < image[i] for i in range(r)):
                index = (slice(None), slice(None), *pixel)
                out[index] += cols[:, :, kk, ll]
    return out


def _col2im_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    x = tensor_arg(arg_types, 0, "data")
    r = shape_input(arg_types, 1, "image_shape")
    shape_input(arg_types, 2, "block_shape")
    return TensorType((x.shape[0], AnyDim(), *unknown(r)), x.dtype)


define_kernel_op(
    "dyn.col2im",
    3,
    _col2im_rel,
    lambda ins, attrs: col2im_ref(
        np.asarray(ins[0]),
        ints(ins[1]),
        ints(ins[2]),
        attrs.dilations,
        attrs.pads,
        attrs.strides,
    ),
    attrs={"dilations": (), "pads": (), "strides": ()},
    doc="ONNX Col2Im with a run-time image shape and block shape.",
)


def col2im(
    data: Expr,
    image_shape: Expr,
    block_shape: Expr,
    dilations: Sequence[int] = (),
    pads: Sequence[int] = (),
    strides: Sequence[int] = (),
) -> Call:
    """ONNX ``Col2Im`` with run-time ``image_shape`` and ``block_shape``."""
    return make_call(
        "dyn.col2im",
        [data, image_shape, block_shape],
        dilations=tuple(int(v) for v in dilations),
        pads=tuple(int(v) for v in pads),
        strides=tuple(int(v) for v in strides),
    )


def affine_grid_ref(theta: np.ndarray, size: Sequence[int], align_corners: bool) -> np.ndarray:
    """ONNX ``AffineGrid``: the (N, *spatial, r) sampling grid of the affine maps
    ``theta`` (N, r, r + 1) over normalised coordinates of the spatial sizes."""
    n, spatial = size[0], size[2:]
    axes = []
    for d in spatial:
        if align_corners:
            axes.append(np.linspace(-1.0, 1.0, d) if d > 1 else np.zeros(1))
        else:
            axes.append((2 * np.arange(d) + 1) / d - 1)
    mesh = np.meshgrid(*axes, indexing="ij")
    coords = [m.reshape(-1) for m in reversed(mesh)]  # x first
    base = np.stack([*coords, np.ones_like(coords[0])], axis=1)  # (P, r + 1)
    grid = np.einsum("pk,nrk->npr", base, theta.astype(np.float64))
    return grid.reshape(n, *spatial, len(spatial)).astype(theta.dtype)


def _affine_grid_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    theta = tensor_arg(arg_types, 0, "theta")
    m = shape_input(arg_types, 1, "size")
    return TensorType((*unknown(m - 1), m - 2), theta.dtype)


define_kernel_op(
    "dyn.affine_grid",
    2,
    _affine_grid_rel,
    lambda ins, attrs: affine_grid_ref(np.asarray(ins[0]), ints(ins[1]), bool(attrs.align_corners)),
    attrs={"align_corners": False},
    doc="ONNX AffineGrid for a run-time output size (N, C, spatial...).",
)


def affine_grid(theta: Expr, size: Expr, align_corners: bool = False) -> Call:
    """ONNX ``AffineGrid`` of ``theta`` over the run-time ``size``."""
    return make_call("dyn.affine_grid", [theta, size], align_corners=bool(align_corners))


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


del _name, _op
