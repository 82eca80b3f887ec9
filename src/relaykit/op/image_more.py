"""More image operators: ``dilation2d``, ``crop_and_resize`` and ``affine_grid``.

``dilation2d(data, weight)`` is grey-scale morphological dilation: each output
pixel is the maximum over the kernel window of ``data + weight`` (depthwise: one
kernel per channel), with ``strides``, ``dilations`` and zero ``padding`` as
TVM pads it (``(top, left)`` or ``(top, left, bottom, right)``). Layouts are
``NCHW`` with an ``IHW`` kernel, or ``NHWC`` with an ``HWI`` kernel.

``crop_and_resize(data, boxes, box_indices, crop_size)`` crops each box
``(y1, x1, y2, x2)`` (normalised to [0, 1], corners map to the first and last
pixel) of image ``box_indices[i]`` and resizes it to ``crop_size`` with
``bilinear`` or ``nearest_neighbor`` sampling, as TensorFlow's op does; a sample
outside the image gets ``extrapolation_value``.

``affine_grid(data, target_shape)`` turns (N, 2, 3) affine matrices into an
(N, 2, H, W) sampling grid of normalised ``(x, y)`` coordinates, the input of
``grid_sample``: the output points are spread evenly over [-1, 1] (corners
included).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 3, 8, 8))
>>> w = relay.var("w", shape=(3, 2, 2))
>>> dilation2d(x, w).attrs.data_layout
'NCHW'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type

from ._relations import FLOAT_DTYPES, INT_DTYPES, tensor_arg
from .define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["affine_grid", "crop_and_resize", "dilation2d"]


def _pair(value: Any, what: str) -> tuple[int, int]:
    vals = (
        (int(value),) * 2 if isinstance(value, (int, np.integer)) else tuple(int(v) for v in value)
    )
    if len(vals) == 1:
        vals = vals * 2
    if len(vals) != 2:
        raise TypeRelError(f"dilation2d {what} must have 2 values (height, width), got {vals}")
    return vals[0], vals[1]


def _pads(padding: Any) -> tuple[int, int, int, int]:
    vals = tuple(int(v) for v in padding)
    if len(vals) == 1:
        return (vals[0],) * 4
    if len(vals) == 2:
        return vals[0], vals[1], vals[0], vals[1]
    if len(vals) == 4:
        return vals[0], vals[1], vals[2], vals[3]
    raise TypeRelError(
        f"dilation2d padding must have 1, 2 (top, left) or 4 (top, left, bottom, right) "
        f"values, got {vals}"
    )


_D2D_LAYOUTS = {"NCHW": "IHW", "NHWC": "HWI"}


def _d2d_geometry(
    dshape: Sequence[int], wshape: Sequence[int], attrs: Attrs
) -> tuple[int, int, int, int, int]:
    """(channels, kh, kw, out_h, out_w) of a dilation2d, checking the attributes."""
    if _D2D_LAYOUTS.get(attrs.data_layout) != attrs.kernel_layout:
        raise TypeRelError(
            "dilation2d supports data_layout/kernel_layout NCHW/IHW or NHWC/HWI, got "
            f"{attrs.data_layout}/{attrs.kernel_layout}"
        )
    if attrs.data_layout == "NCHW":
        c, h, w = dshape[1], dshape[2], dshape[3]
        kc, kh, kw = wshape
    else:
        h, w, c = dshape[1], dshape[2], dshape[3]
        kh, kw, kc = wshape
    if kc != c:
        raise TypeRelError(f"dilation2d kernel has {kc} channels, data has {c}")
    sh, sw = _pair(attrs.strides, "strides")
    dh, dw = _pair(attrs.dilations, "dilations")
    pt, pl, pb, pr = _pads(attrs.padding)
    oh = (h + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
    ow = (w + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
    if oh <= 0 or ow <= 0:
        raise TypeRelError(f"dilation2d window is larger than the padded input ({h}x{w})")
    return c, kh, kw, oh, ow


def _dilation2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    weight = tensor_arg(arg_types, 1, "weight")
    if data.ndim != 4 or weight.ndim != 3:
        raise TypeRelError(f"dilation2d needs 4-D data and a 3-D kernel, got {data}, {weight}")
    c, _, _, oh, ow = _d2d_geometry(data.shape, weight.shape, attrs)
    n = data.shape[0]
    shape = (n, c, oh, ow) if attrs.data_layout == "NCHW" else (n, oh, ow, c)
    return TensorType(shape, attrs.out_dtype or data.dtype)


def _dilation2d_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, weight = inputs
    _, kh, kw, oh, ow = _d2d_geometry(data.shape, weight.shape, attrs)
    if attrs.data_layout == "NHWC":  # work in NCHW / IHW
        data = data.transpose(0, 3, 1, 2)
        weight = weight.transpose(2, 0, 1)
    sh, sw = _pair(attrs.strides, "strides")
    dh, dw = _pair(attrs.dilations, "dilations")
    pt, pl, pb, pr = _pads(attrs.padding)
    padded = np.pad(data, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    out = np.full((*data.shape[:2], oh, ow), -np.inf, dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            win = padded[
                :,
                :,
                i * dh : i * dh + (oh - 1) * sh + 1 : sh,
                j * dw : j * dw + (ow - 1) * sw + 1 : sw,
            ]
            np.maximum(out, win + weight[None, :, i, j, None, None], out=out)
    if attrs.data_layout == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(out.astype(attrs.out_dtype or inputs[0].dtype))


define_op(
    "image.dilation2d",
    num_inputs=2,
    attrs={
        "strides": (1, 1),
        "padding": (0, 0),
        "dilations": (1, 1),
        "data_layout": "NCHW",
        "kernel_layout": "IHW",
        "out_dtype": "",
    },
    attrs_type_key="relay.attrs.Dilation2DAttrs",
    type_rel=_dilation2d_rel,
    compute=_dilation2d_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Grey-scale morphological dilation (max of data + kernel over each window).",
)


def dilation2d(
    data: Expr,
    weight: Expr,
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0),
    dilations: Sequence[int] = (1, 1),
    data_layout: str = "NCHW",
    kernel_layout: str = "IHW",
    out_dtype: str = "",
) -> Call:
    """Morphological dilation of ``data`` by the per-channel kernel ``weight``."""
    return make_call(
        "image.dilation2d",
        [data, weight],
        strides=tuple(int(v) for v in strides),
        padding=tuple(int(v) for v in padding),
        dilations=tuple(int(v) for v in dilations),
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_dtype=out_dtype or "",
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


# -- affine_grid ----------------------------------------------------------------------------------


def _affine_grid_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.ndim != 3 or data.shape[1:] != (2, 3) or data.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"affine_grid needs float (N, 2, 3) affine matrices, got {data}")
    h, w = (int(v) for v in attrs.target_shape)
    return TensorType((data.shape[0], 2, h, w), data.dtype)


def _affine_grid_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    theta = inputs[0].astype(np.float64)
    h, w = (int(v) for v in attrs.target_shape)
    ys = np.linspace(-1.0, 1.0, h) if h > 1 else np.array([-1.0])
    xs = np.linspace(-1.0, 1.0, w) if w > 1 else np.array([-1.0])
    yy, xx = np.meshgrid(ys, xs, indexing="ij")
    points = np.stack([xx.ravel(), yy.ravel(), np.ones(h * w)])  # (3, H*W)
    out = np.einsum("nij,jk->nik", theta, points).reshape(theta.shape[0], 2, h, w)
    return out.astype(inputs[0].dtype)


define_op(
    "image.affine_grid",
    num_inputs=1,
    attrs={"target_shape": (1, 1)},
    attrs_type_key="relay.attrs.AffineGridAttrs",
    type_rel=_affine_grid_rel,
    compute=_affine_grid_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Sampling grid of (N, 2, 3) affine transforms.",
)


def affine_grid(data: Expr, target_shape: Sequence[int]) -> Call:
    """The (N, 2, H, W) ``(x, y)`` grid of the affine maps ``data`` over ``target_shape``."""
    shape = tuple(int(v) for v in target_shape)
    if len(shape) != 2:
        raise TypeRelError(f"affine_grid target_shape must be (height, width), got {shape}")
    return make_call("image.affine_grid", [data], target_shape=shape)
