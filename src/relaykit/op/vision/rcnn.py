"""Region-of-interest pooling (TVM's ``vision/rcnn.py``): ``vision.roi_align`` and
``vision.roi_pool``.

``roi_align(data, rois)`` pools each region of interest of an NCHW ``data`` into a
``pooled_size`` grid by averaging (or taking the maximum of) bilinearly interpolated
samples: ``sample_ratio`` samples per bin and axis, or ``ceil(roi size / bins)``
when it is 0. ``rois`` is (R, 5): the batch index, then ``x1, y1, x2, y2`` in
input coordinates (times ``spatial_scale``). ``aligned=True`` shifts the box by
half a pixel (ONNX's ``half_pixel``, torchvision's ``aligned``); otherwise a box is
at least one pixel wide. The max mode takes the largest interpolated sample (TVM's
semantics); with ``max_over_corners=True`` the largest weighted corner term of each
sample, as ONNX Runtime does (the ONNX importer sets it). ``layout="NHWC"`` takes
and gives channels-last tensors.

``roi_pool(data, rois)`` max-pools each region of interest (rows of ``rois``: batch
index, ``x1, y1, x2, y2``) of NCHW ``data`` into a ``pooled_size`` grid, as Caffe's
ROIPooling: the box corners are scaled by ``spatial_scale`` and rounded, the box is
at least one pixel, bin ``p`` covers ``[floor(p * size / bins), ceil((p + 1) * size /
bins))`` clamped to the image, and an empty bin is 0.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 3, 8, 8))
>>> r = relay.var("r", shape=(4, 5))
>>> roi_align(x, r, pooled_size=(2, 2)).attrs.pooled_size
[2, 2]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import FLOAT_DTYPES, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["roi_align", "roi_pool"]


def _roi_align_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    rois = tensor_arg(arg_types, 1, "rois")
    if attrs.layout not in ("NCHW", "NHWC"):
        raise TypeRelError(f"roi_align supports layouts NCHW and NHWC, got {attrs.layout}")
    if data.ndim != 4:
        raise TypeRelError(f"roi_align data must be 4-D ({attrs.layout}), got {data}")
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise TypeRelError(
            f"roi_align rois must be (R, 5): batch index, x1, y1, x2, y2; got {rois}"
        )
    if data.dtype not in FLOAT_DTYPES or rois.dtype != data.dtype:
        raise TypeRelError(f"roi_align needs float data and rois of one dtype, got {data}, {rois}")
    if attrs.mode not in ("avg", "max"):
        raise TypeRelError(f"roi_align mode must be avg or max, got {attrs.mode!r}")
    ph, pw = (int(v) for v in attrs.pooled_size)
    if attrs.layout == "NHWC":
        return TensorType((rois.shape[0], ph, pw, data.shape[3]), data.dtype)
    return TensorType((rois.shape[0], data.shape[1], ph, pw), data.dtype)


def _axis_samples(start: float, size: float, bins: int, grid: int, n: int):
    """Per sample of one axis: low and high source index and their weights (zero for a
    sample outside [-1, n])."""
    pos = np.arange(bins)[:, None] * (size / bins) + (np.arange(grid)[None, :] + 0.5) * (
        size / bins / grid
    )
    pos = (start + pos).reshape(-1)
    outside = (pos < -1.0) | (pos > n)
    pos = np.maximum(pos, 0.0)
    low = np.floor(pos).astype(np.int64)
    at_end = low >= n - 1
    low = np.where(at_end, n - 1, low)
    high = np.where(at_end, n - 1, low + 1)
    pos = np.where(at_end, low, pos)
    frac = pos - low
    w_low = np.where(outside, 0.0, 1.0 - frac)
    w_high = np.where(outside, 0.0, frac)
    return low, high, w_low, w_high


def _roi_align_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, rois = inputs
    if attrs.layout == "NHWC":  # the NCHW computation on transposed data
        out = _roi_align_nchw(data.transpose(0, 3, 1, 2), rois, attrs)
        return np.ascontiguousarray(out.transpose(0, 2, 3, 1))
    return _roi_align_nchw(data, rois, attrs)


def _roi_align_nchw(data: np.ndarray, rois: np.ndarray, attrs: Attrs) -> np.ndarray:
    _, c, h, w = data.shape
    ph, pw = (int(v) for v in attrs.pooled_size)
    scale, ratio = float(attrs.spatial_scale), int(attrs.sample_ratio)
    offset = 0.5 if attrs.aligned else 0.0
    out = np.zeros((rois.shape[0], c, ph, pw), dtype=np.float64)
    for r, roi in enumerate(rois.astype(np.float64)):
        x1, y1, x2, y2 = (float(v) * scale - offset for v in roi[1:])
        rw, rh = x2 - x1, y2 - y1
        if not attrs.aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = ratio if ratio > 0 else math.ceil(rh / ph)
        gw = ratio if ratio > 0 else math.ceil(rw / pw)
        if gh <= 0 or gw <= 0:
            continue
        ylo, yhi, wyl, wyh = _axis_samples(y1, rh, ph, gh, h)
        xlo, xhi, wxl, wxh = _axis_samples(x1, rw, pw, gw, w)
        img = data[int(roi[0])].astype(np.float64)  # (C, H, W)
        corners = [
            (ylo, xlo, wyl, wxl),
            (ylo, xhi, wyl, wxh),
            (yhi, xlo, wyh, wxl),
            (yhi, xhi, wyh, wxh),
        ]
        # each term: (C, PH*GH, PW*GW)
        terms = [
            img[:, yi[:, None], xi[None, :]] * (wy[:, None] * wx[None, :])
            for yi, xi, wy, wx in corners
        ]
        if attrs.mode == "avg":
            samples = terms[0] + terms[1] + terms[2] + terms[3]
            out[r] = samples.reshape(c, ph, gh, pw, gw).sum(axis=(2, 4)) / (gh * gw)
        else:
            if attrs.max_over_corners:  # ONNX Runtime's max: of the weighted corners
                samples = np.maximum(np.maximum(terms[0], terms[1]), np.maximum(terms[2], terms[3]))
            else:  # TVM's max: of the interpolated samples
                samples = terms[0] + terms[1] + terms[2] + terms[3]
            out[r] = samples.reshape(c, ph, gh, pw, gw).max(axis=(2, 4))
    return out.astype(data.dtype)


define_op(
    "vision.roi_align",
    num_inputs=2,
    attrs={
        "pooled_size": (1, 1),
        "spatial_scale": 1.0,
        "sample_ratio": 0,
        "layout": "NCHW",
        "mode": "avg",
        "aligned": False,
        "max_over_corners": False,
    },
    attrs_type_key="relay.attrs.ROIAlignAttrs",
    type_rel=_roi_align_rel,
    compute=_roi_align_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Region-of-interest align pooling.",
)


def roi_align(
    data: Expr,
    rois: Expr,
    pooled_size: Sequence[int] = (1, 1),
    spatial_scale: float = 1.0,
    sample_ratio: int = 0,
    layout: str = "NCHW",
    mode: str = "avg",
    aligned: bool = False,
    max_over_corners: bool = False,
) -> Call:
    """Pool each ``rois`` row (batch index, x1, y1, x2, y2) of NCHW or NHWC ``data`` to
    ``pooled_size`` (see the module docstring). ``mode="max"`` takes the largest
    interpolated sample, as TVM does; ``max_over_corners=True`` (relaykit's, for ONNX
    ``RoiAlign``) the largest weighted corner term, as ONNX Runtime does."""
    return make_call(
        "vision.roi_align",
        [data, rois],
        pooled_size=tuple(int(v) for v in pooled_size),
        spatial_scale=float(spatial_scale),
        sample_ratio=int(sample_ratio),
        layout=layout,
        mode=mode,
        aligned=bool(aligned),
        max_over_corners=bool(max_over_corners),
    )


# -- roi_pool -------------------------------------------------------------------------------------


def _roi_pool_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    rois = tensor_arg(arg_types, 1, "rois")
    if attrs.layout != "NCHW" or data.ndim != 4:
        raise TypeRelError(f"roi_pool supports 4-D NCHW data, got {data} ({attrs.layout})")
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise TypeRelError(f"roi_pool rois must be (R, 5): batch index, x1, y1, x2, y2; got {rois}")
    ph, pw = (int(v) for v in attrs.pooled_size)
    return TensorType((rois.shape[0], data.shape[1], ph, pw), data.dtype)


def _bins(start: int, size: int, bins: int, limit: int) -> list[tuple[int, int]]:
    step = size / bins
    out = []
    for p in range(bins):
        lo = min(max(math.floor(p * step) + start, 0), limit)
        hi = min(max(math.ceil((p + 1) * step) + start, 0), limit)
        out.append((lo, hi))
    return out


def _roi_pool_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, rois = inputs
    _, c, h, w = data.shape
    ph, pw = (int(v) for v in attrs.pooled_size)
    scale = float(attrs.spatial_scale)
    out = np.zeros((rois.shape[0], c, ph, pw), dtype=data.dtype)
    for r, roi in enumerate(rois.astype(np.float64)):
        x1, y1, x2, y2 = (math.floor(float(v) * scale + 0.5) for v in roi[1:])
        rows = _bins(y1, max(y2 - y1 + 1, 1), ph, h)
        cols = _bins(x1, max(x2 - x1 + 1, 1), pw, w)
        img = data[int(roi[0])]
        for i, (ylo, yhi) in enumerate(rows):
            for j, (xlo, xhi) in enumerate(cols):
                if yhi > ylo and xhi > xlo:
                    out[r, :, i, j] = img[:, ylo:yhi, xlo:xhi].max(axis=(1, 2))
    return out


define_op(
    "vision.roi_pool",
    num_inputs=2,
    attrs={"pooled_size": (1, 1), "spatial_scale": 1.0, "layout": "NCHW"},
    attrs_type_key="relay.attrs.ROIPoolAttrs",
    type_rel=_roi_pool_rel,
    compute=_roi_pool_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Region-of-interest max pooling (Caffe's ROIPooling).",
)


def roi_pool(
    data: Expr,
    rois: Expr,
    pooled_size: Sequence[int],
    spatial_scale: float,
    layout: str = "NCHW",
) -> Call:
    """Max-pool each ``rois`` row (batch index, x1, y1, x2, y2) of NCHW ``data``."""
    return make_call(
        "vision.roi_pool",
        [data, rois],
        pooled_size=tuple(int(v) for v in pooled_size),
        spatial_scale=float(spatial_scale),
        layout=layout,
    )
