"""Image resizing: TVM's ``image.resize1d/2d/3d``, an N-d ``image.resize`` and
``image.crop_and_resize``.

Resizing is separable: each resized axis is interpolated on its own with an
(out x in) weight matrix, built from the coordinate transformation
(``half_pixel``, ``align_corners``, ``asymmetric``, ``pytorch_half_pixel``,
``half_pixel_symmetric``, ``tf_crop_and_resize``) and the method's
coefficients (``nearest`` with its rounding rule, ``linear``, ``cubic``,
optionally antialiased), with ONNX's semantics.

``crop_and_resize(data, boxes, box_indices, crop_size)`` crops each box
``(y1, x1, y2, x2)`` (normalised to [0, 1], corners map to the first and last
pixel) of image ``box_indices[i]`` and resizes it to ``crop_size`` with
``bilinear`` or ``nearest_neighbor`` sampling, as TensorFlow's op does; a sample
outside the image gets ``extrapolation_value``.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 1, 2, 2))
>>> resize2d(x, size=(4, 4), method="nearest_neighbor").attrs.size
[4, 4]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, const
from relaykit.ir.symbolic import PrimExpr
from relaykit.ir.types import TensorType, Type
from relaykit.op import _numeric as num
from relaykit.op._relations import INT_DTYPES, static_value, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = [
    "resize",
    "resize1d",
    "resize2d",
    "resize3d",
    "axis_weights",
    "resize_nd_attrs",
    "crop_and_resize",
]

_METHODS = ("nearest", "linear", "cubic")
_ROUNDING = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _source_coords(mode: str, y: np.ndarray, scale: float, n_in: int, n_out: int, roi: Any):
    """Source coordinates of output positions ``y`` and the mask of extrapolated ones."""
    out_f = scale * n_in
    extra = None
    if mode == "align_corners":
        x = np.zeros_like(y) if out_f == 1 else y * (n_in - 1) / (out_f - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "tf_crop_and_resize":
        lo, hi = roi
        if out_f == 1:
            x = np.full_like(y, (hi - lo) * (n_in - 1) / 2)
        else:
            x = y * (hi - lo) * (n_in - 1) / (out_f - 1)
        x = x + lo * (n_in - 1)
        extra = (x < 0) | (x > n_in - 1)
    elif mode == "pytorch_half_pixel":
        x = np.full_like(y, -0.5) if out_f == 1 else (y + 0.5) / scale - 0.5
    elif mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif mode == "half_pixel_symmetric":
        offset = (n_in / 2) * (1 - n_out / out_f)
        x = offset + (y + 0.5) / scale - 0.5
    else:
        raise TypeRelError(f"unknown coordinate_transformation_mode {mode!r}")
    return x, extra


def _coeff_fn(attrs: Attrs) -> Callable[[np.ndarray, float], np.ndarray]:
    """Coefficients (n_out, taps) from the fractional positions ``ratio``."""
    method, a = attrs.method, float(attrs.cubic_alpha)
    antialias = bool(attrs.antialias)

    def nearest(r: np.ndarray, scale: float) -> np.ndarray:
        rule = attrs.rounding_method or "round_prefer_floor"
        right = {
            "round_prefer_floor": r > 0.5,
            "round_prefer_ceil": r >= 0.5,
            "floor": np.zeros_like(r, dtype=bool),
            "ceil": np.ones_like(r, dtype=bool),
        }[rule]
        right = np.where(r == 1.0, True, right)
        return np.stack([~right, right], axis=1).astype(np.float64)

    def cubic_kernel(x: np.ndarray) -> np.ndarray:
        x = np.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x <= 1, near, np.where(x < 2, far, 0.0))

    def smooth(r: np.ndarray, scale: float, support: int, kernel: Callable) -> np.ndarray:
        s = min(scale, 1.0)
        start = int(np.floor(-support / s) + 1)
        offsets = np.arange(start, 2 - start)
        c = kernel((offsets[None, :] - r[:, None]) * s)
        return c / c.sum(axis=1, keepdims=True)

    def linear(r: np.ndarray, scale: float) -> np.ndarray:
        if not antialias:
            return np.stack([1 - r, r], axis=1)
        return smooth(r, scale, 1, lambda x: np.clip(1 - np.abs(x), 0, 1))

    def cubic(r: np.ndarray, scale: float) -> np.ndarray:
        if not antialias:
            return np.stack(
                [cubic_kernel(r + 1), cubic_kernel(r), cubic_kernel(1 - r), cubic_kernel(2 - r)],
                axis=1,
            )
        return smooth(r, scale, 2, cubic_kernel)

    return {"nearest": nearest, "linear": linear, "cubic": cubic}[method]


def axis_weights(n_in: int, n_out: int, scale: float, roi: Any, attrs: Attrs):
    """The (n_out, n_in) interpolation matrix of one axis and its extrapolation mask."""
    y = np.arange(n_out, dtype=np.float64)
    x, extra = _source_coords(attrs.coordinate_transformation_mode, y, scale, n_in, n_out, roi)
    xi = np.floor(x)
    ratio = np.where(x == xi, 1.0, x - xi)
    coeffs = _coeff_fn(attrs)(ratio, scale)
    n = coeffs.shape[1]
    pad = int(np.ceil(n / 2))
    xp = x + pad
    p = np.floor(xp).astype(np.int64)
    frac = xp - p
    if n % 2 == 0:
        offset = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        base = -((n - 1) // 2)
        offset = np.where(frac <= 0.5, base, base + 1)
    idx = (p + offset)[:, None] + np.arange(n)[None, :] - pad
    if attrs.cubic_exclude:
        coeffs = np.where((idx < 0) | (idx >= n_in), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    w = np.zeros((n_out, n_in))
    rows = np.repeat(np.arange(n_out), n)
    np.add.at(w, (rows, np.clip(idx, 0, n_in - 1).reshape(-1)), coeffs.reshape(-1))
    return w, extra


def _size_ok(v: Any) -> bool:
    """A resize output size: a non-negative int or a symbolic size (``te.var``)."""
    return isinstance(v, PrimExpr) or (isinstance(v, int) and v >= 0)


def _resize_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    size = tuple(attrs.size or ())
    if len(size) != data.ndim or any(not _size_ok(s) for s in size):
        raise TypeRelError(f"resize size {size} must give one non-negative size per axis")
    if attrs.method not in _METHODS:
        raise TypeRelError(f"resize method must be one of {', '.join(_METHODS)}")
    if attrs.rounding_method and attrs.rounding_method not in _ROUNDING:
        raise TypeRelError(f"rounding_method must be one of {', '.join(_ROUNDING)}")
    return TensorType(size, data.dtype)


def _resize_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    r = x.ndim
    scales = attrs.scales or tuple(
        (o / i if i else 1.0) for o, i in zip(attrs.size, x.shape, strict=True)
    )
    roi = attrs.roi or ()
    out = x.astype(np.float64)
    for axis in range(r):
        n_in, n_out = x.shape[axis], attrs.size[axis]
        axis_roi = (roi[axis], roi[axis + r]) if roi else (0.0, 1.0)
        identity = n_in == n_out and np.isclose(scales[axis], 1.0) and axis_roi == (0.0, 1.0)
        if identity:
            continue
        w, extra = axis_weights(n_in, n_out, float(scales[axis]), axis_roi, attrs)
        out = np.moveaxis(np.tensordot(w, np.moveaxis(out, axis, 0), axes=(1, 0)), 0, axis)
        if extra is not None and extra.any():
            shape = [1] * r
            shape[axis] = n_out
            out = np.where(extra.reshape(shape), attrs.extrapolation_value, out)
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        out = np.clip(np.rint(out), info.min, info.max)
    return num.as_out(out, x.dtype)


define_op(
    "image.resize",
    num_inputs=1,
    attrs={
        "size": None,
        "scales": (),
        "roi": (),
        "method": "linear",
        "coordinate_transformation_mode": "half_pixel",
        "rounding_method": "",
        "cubic_alpha": -0.75,
        "cubic_exclude": 0,
        "extrapolation_value": 0.0,
        "antialias": False,
    },
    attrs_type_key="relay.attrs.ResizeAttrs",
    type_rel=_resize_rel,
    compute=_resize_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Resize every axis to size (ONNX Resize semantics).",
)


def resize(
    data: Expr,
    size: Sequence[int],
    scales: Sequence[float] = (),
    roi: Sequence[float] = (),
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "",
    cubic_alpha: float = -0.75,
    cubic_exclude: int = 0,
    extrapolation_value: float = 0.0,
    antialias: bool = False,
) -> Call:
    """Resize ``data`` to the full output shape ``size``; ``scales`` (one per axis) drive
    the coordinate transformation when given, as ONNX's ``scales`` input does."""
    return make_call(
        "image.resize",
        [data],
        size=tuple(int(s) for s in size),
        scales=tuple(float(s) for s in scales),
        roi=tuple(float(v) for v in roi),
        method=method,
        coordinate_transformation_mode=coordinate_transformation_mode,
        rounding_method=rounding_method,
        cubic_alpha=float(cubic_alpha),
        cubic_exclude=int(cubic_exclude),
        extrapolation_value=float(extrapolation_value),
        antialias=bool(antialias),
    )


_RESIZE_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
_TVM_METHODS = {"nearest_neighbor": "nearest", "linear": "linear", "cubic": "cubic"}
# TVM's rounding names for nearest-neighbour, in ONNX's terms ("round" rounds half up here:
# coordinates are never negative once clamped)
_TVM_ROUNDING = {
    "round": "round_prefer_ceil",
    "round_prefer_floor": "round_prefer_floor",
    "round_prefer_ceil": "round_prefer_ceil",
    "floor": "floor",
    "ceil": "ceil",
}


def _spatial_axes(layout: str, rank: int) -> list[int]:
    if layout not in _RESIZE_LAYOUTS[rank]:
        raise TypeRelError(
            f"resize{rank}d layout must be one of {', '.join(_RESIZE_LAYOUTS[rank])}, "
            f"got {layout!r}"
        )
    return [i for i, c in enumerate(layout) if c in "DHW"]


def resize_nd_attrs(attrs: Attrs, shape: Sequence[int], rank: int) -> Attrs:
    """The N-d ``image.resize`` attributes equivalent to a TVM ``resizeKd`` call."""
    axes = _spatial_axes(attrs.layout, rank)
    size: list[Any] = list(shape)
    for axis, s in zip(axes, attrs.size, strict=True):
        size[axis] = s if isinstance(s, PrimExpr) else int(s)  # a symbolic size stays one
    method = _TVM_METHODS.get(attrs.method)
    if method is None:
        raise TypeRelError(
            f"resize method must be one of {', '.join(_TVM_METHODS)}, got {attrs.method!r}"
        )
    rounding = ""
    if method == "nearest":
        default = "round" if attrs.coordinate_transformation_mode == "align_corners" else "floor"
        name = attrs.rounding_method or default
        if name not in _TVM_ROUNDING:
            raise TypeRelError(f"rounding_method must be one of {', '.join(_TVM_ROUNDING)}")
        rounding = _TVM_ROUNDING[name]
    roi: tuple[float, ...] = ()
    if attrs.coordinate_transformation_mode == "tf_crop_and_resize" and attrs.roi:
        starts, ends = [0.0] * len(shape), [1.0] * len(shape)
        for k, axis in enumerate(axes):
            starts[axis], ends[axis] = float(attrs.roi[k]), float(attrs.roi[k + rank])
        roi = (*starts, *ends)
    return Attrs(
        {
            "size": tuple(size),
            "scales": (),
            "roi": roi,
            "method": method,
            "coordinate_transformation_mode": attrs.coordinate_transformation_mode,
            "rounding_method": rounding,
            "cubic_alpha": float(attrs.cubic_alpha),
            "cubic_exclude": int(attrs.cubic_exclude),
            "extrapolation_value": float(attrs.extrapolation_value),
            "antialias": False,
        },
        "relay.attrs.ResizeAttrs",
    )


def _make_resize_kd(rank: int) -> tuple[Callable[..., Type], Callable[..., np.ndarray]]:
    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        if data.ndim != rank + 2:
            raise TypeRelError(f"resize{rank}d takes a {rank + 2}-d tensor, got {data}")
        size = tuple(attrs.size or ())
        if len(size) != rank or any(not _size_ok(v) for v in size):
            raise TypeRelError(
                f"resize{rank}d size must be {rank} non-negative integers, got {size}"
            )
        nd = resize_nd_attrs(attrs, data.shape, rank)
        return TensorType(nd.size, attrs.out_dtype or data.dtype)

    def kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        out = _resize_kernel([inputs[0]], resize_nd_attrs(attrs, inputs[0].shape, rank))
        return out.astype(attrs.out_dtype, copy=False) if attrs.out_dtype else out

    return rel, kernel


for _rank in (1, 2, 3):
    _rel, _kernel = _make_resize_kd(_rank)
    define_op(
        f"image.resize{_rank}d",
        num_inputs=1,
        attrs={
            "size": None,
            "roi": None,
            "layout": _RESIZE_LAYOUTS[_rank][0],
            "method": "linear",
            "coordinate_transformation_mode": "half_pixel",
            "rounding_method": "",
            "cubic_alpha": -0.5,
            "cubic_exclude": 0,
            "extrapolation_value": 0.0,
            "out_dtype": "",
        },
        attrs_type_key=f"relay.attrs.Resize{_rank}DAttrs",
        type_rel=_rel,
        compute=_kernel,
        pattern=OpPattern.INJECTIVE,
        doc=f"Resize the {_rank} spatial axes of a tensor (TVM's image.resize{_rank}d).",
    )


def _roi_const(roi: Any, rank: int) -> Expr:
    values = tuple(float(v) for v in roi) if roi is not None else (0.0,) * (2 * rank)
    return const(np.asarray(values, dtype="float32"))


def _resize_kd(
    rank: int,
    data: Expr,
    size: Any,
    roi: Any,
    layout: str | None,
    method: str,
    coordinate_transformation_mode: str,
    rounding_method: str,
    cubic_alpha: float,
    cubic_exclude: int,
    extrapolation_value: float,
    out_dtype: str,
) -> Call:
    size = static_value(size)
    if isinstance(size, Expr) and rank == 2:  # a run-time size: dyn.image.resize2d
        return make_call(
            "dyn.image.resize2d",
            [data, size, roi if isinstance(roi, Expr) else _roi_const(roi, rank)],
            layout=layout or _RESIZE_LAYOUTS[rank][0],
            method=method,
            coordinate_transformation_mode=coordinate_transformation_mode,
            rounding_method=rounding_method,
            cubic_alpha=cubic_alpha,
            cubic_exclude=cubic_exclude,
            extrapolation_value=extrapolation_value,
            out_dtype=out_dtype,
        )
    if isinstance(size, Expr):
        raise TypeRelError(
            f"resize{rank}d with a run-time size (an expression) is not supported (TVM has "
            "dyn.image.resize2d only); pass the size as integers"
        )
    size_t = tuple(v if isinstance(v, PrimExpr) else int(v) for v in size)
    roi_t = tuple(float(v) for v in roi) if roi is not None else (0.0,) * (2 * rank)
    return make_call(
        f"image.resize{rank}d",
        [data],
        size=size_t,
        roi=roi_t,
        layout=layout or _RESIZE_LAYOUTS[rank][0],
        method=method,
        coordinate_transformation_mode=coordinate_transformation_mode,
        rounding_method=rounding_method,
        cubic_alpha=float(cubic_alpha),
        cubic_exclude=int(cubic_exclude),
        extrapolation_value=float(extrapolation_value),
        out_dtype=out_dtype or "",
    )


def resize1d(
    data: Expr,
    size: Sequence[int],
    roi: Any = None,
    layout: str = "NCW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "",
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
    extrapolation_value: float = 0.0,
    out_dtype: str = "",
) -> Call:
    """TVM's ``relay.image.resize1d``: resize the width of an NCW or NWC tensor
    (``method``: ``nearest_neighbor``, ``linear`` or ``cubic``)."""
    return _resize_kd(
        1,
        data,
        size,
        roi,
        layout,
        method,
        coordinate_transformation_mode,
        rounding_method,
        cubic_alpha,
        cubic_exclude,
        extrapolation_value,
        out_dtype,
    )


def resize2d(
    data: Expr,
    size: Sequence[int],
    roi: Any = None,
    layout: str = "NCHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "",
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
    extrapolation_value: float = 0.0,
    out_dtype: str = "",
) -> Call:
    """TVM's ``relay.image.resize2d``: resize the height and width of an NCHW or NHWC
    tensor (``method``: ``nearest_neighbor``, ``linear`` or ``cubic``)."""
    return _resize_kd(
        2,
        data,
        size,
        roi,
        layout,
        method,
        coordinate_transformation_mode,
        rounding_method,
        cubic_alpha,
        cubic_exclude,
        extrapolation_value,
        out_dtype,
    )


def resize3d(
    data: Expr,
    size: Sequence[int],
    roi: Any = None,
    layout: str = "NCDHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "",
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
    extrapolation_value: float = 0.0,
    out_dtype: str = "",
) -> Call:
    """TVM's ``relay.image.resize3d``: resize depth, height and width of an NCDHW or
    NDHWC tensor (``method``: ``nearest_neighbor``, ``linear`` or ``cubic``)."""
    return _resize_kd(
        3,
        data,
        size,
        roi,
        layout,
        method,
        coordinate_transformation_mode,
        rounding_method,
        cubic_alpha,
        cubic_exclude,
        extrapolation_value,
        out_dtype,
    )


# -- crop_and_resize ------------------------------------------------------------------------------


def _crop_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    boxes = tensor_arg(arg_types, 1, "boxes")
    idx = tensor_arg(arg_types, 2, "box_indices")
    if data.ndim != 4 or attrs.layout not in ("NCHW", "NHWC"):
        raise TypeRelError(f"crop_and_resize needs 4-D NCHW or NHWC data, got {data}")
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise TypeRelError(f"crop_and_resize boxes must be (num_boxes, 4), got {boxes}")
    if idx.shape != (boxes.shape[0],) or idx.dtype not in INT_DTYPES:
        raise TypeRelError(
            f"crop_and_resize box_indices must be {boxes.shape[0]} integers, got {idx}"
        )
    if attrs.method not in ("bilinear", "nearest_neighbor"):
        raise TypeRelError(
            f"crop_and_resize method must be bilinear or nearest_neighbor, got {attrs.method!r}"
        )
    ch, cw = (int(v) for v in attrs.crop_size)
    n, c = boxes.shape[0], data.shape[1 if attrs.layout == "NCHW" else 3]
    shape = (n, c, ch, cw) if attrs.layout == "NCHW" else (n, ch, cw, c)
    return TensorType(shape, attrs.out_dtype or data.dtype)


def _crop_coords(lo: float, hi: float, size: int, n_out: int) -> np.ndarray:
    if n_out > 1:
        return lo * (size - 1) + np.arange(n_out) * ((hi - lo) * (size - 1) / (n_out - 1))
    return np.array([0.5 * (lo + hi) * (size - 1)])


def _crop_one(img: np.ndarray, box: np.ndarray, crop: tuple[int, int], attrs: Attrs) -> np.ndarray:
    """Crop and resize one (C, H, W) image to (C, crop_h, crop_w)."""
    _, h, w = img.shape
    ys = _crop_coords(float(box[0]), float(box[2]), h, crop[0])
    xs = _crop_coords(float(box[1]), float(box[3]), w, crop[1])
    inside = ((ys >= 0) & (ys <= h - 1))[:, None] & ((xs >= 0) & (xs <= w - 1))[None, :]
    yc, xc = np.clip(ys, 0, h - 1), np.clip(xs, 0, w - 1)
    if attrs.method == "nearest_neighbor":
        yi, xi = np.rint(yc).astype(np.int64), np.rint(xc).astype(np.int64)
        out = img[:, yi[:, None], xi[None, :]].astype(np.float64)
    else:
        y0, x0 = np.floor(yc).astype(np.int64), np.floor(xc).astype(np.int64)
        y1, x1 = np.ceil(yc).astype(np.int64), np.ceil(xc).astype(np.int64)
        fy, fx = (yc - y0)[:, None], (xc - x0)[None, :]
        im = img.astype(np.float64)
        top = im[:, y0[:, None], x0[None, :]] * (1 - fx) + im[:, y0[:, None], x1[None, :]] * fx
        bot = im[:, y1[:, None], x0[None, :]] * (1 - fx) + im[:, y1[:, None], x1[None, :]] * fx
        out = top * (1 - fy) + bot * fy
    return np.where(inside[None], out, float(attrs.extrapolation_value))


def _crop_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, boxes, idx = inputs
    if attrs.layout == "NHWC":
        data = data.transpose(0, 3, 1, 2)
    crop = (int(attrs.crop_size[0]), int(attrs.crop_size[1]))
    out = (
        np.stack([_crop_one(data[int(i)], b, crop, attrs) for b, i in zip(boxes, idx, strict=True)])
        if len(boxes)
        else np.zeros((0, data.shape[1], *crop))
    )
    if attrs.layout == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(out.astype(attrs.out_dtype or inputs[0].dtype))


define_op(
    "image.crop_and_resize",
    num_inputs=3,
    attrs={
        "crop_size": (1, 1),
        "layout": "NCHW",
        "method": "bilinear",
        "extrapolation_value": 0.0,
        "out_dtype": "",
    },
    attrs_type_key="relay.attrs.CropAndResizeAttrs",
    type_rel=_crop_rel,
    compute=_crop_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Crop boxes out of images and resize them (TensorFlow's crop_and_resize).",
)


def crop_and_resize(
    data: Expr,
    boxes: Expr,
    box_indices: Expr,
    crop_size: Sequence[int],
    layout: str = "NCHW",
    method: str = "bilinear",
    extrapolation_value: float = 0.0,
    out_dtype: str | None = None,
) -> Call:
    """Crop each normalised box ``(y1, x1, y2, x2)`` of image ``box_indices[i]`` and
    resize it to ``crop_size`` (see the module docstring)."""
    return make_call(
        "image.crop_and_resize",
        [data, boxes, box_indices],
        crop_size=tuple(int(v) for v in crop_size),
        layout=layout,
        method=method,
        extrapolation_value=float(extrapolation_value),
        out_dtype=out_dtype or "",
    )
