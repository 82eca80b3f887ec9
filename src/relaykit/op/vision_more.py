"""More vision operators: ``roi_pool``, ``yolo_reorg`` and ``multibox_prior``.

``roi_pool(data, rois)`` max-pools each region of interest (rows of ``rois``: batch
index, ``x1, y1, x2, y2``) of NCHW ``data`` into a ``pooled_size`` grid, as Caffe's
ROIPooling: the box corners are scaled by ``spatial_scale`` and rounded, the box is
at least one pixel, bin ``p`` covers ``[floor(p * size / bins), ceil((p + 1) * size /
bins))`` clamped to the image, and an empty bin is 0.

``yolo_reorg(data, stride)`` is Darknet's ``reorg`` layer: viewing the (N, C, H, W)
input as (N, C / s^2, H * s, W * s), each ``s x s`` tile goes to ``s^2`` channel
groups; the output is (N, C * s^2, H / s, W / s).

``multibox_prior(data, sizes, ratios, steps, offsets, clip)`` makes SSD's anchor
boxes ``(left, top, right, bottom)`` for each pixel of the (N, C, H, W) feature map:
one per size (aspect ratio 1) and one per further ratio (with the first size),
centred at ``(pixel + offset) * step``; a step of -1 means ``1 / H`` (``1 / W``).

``get_valid_counts(data, score_threshold, id_index, score_index)`` moves the boxes
(rows of the (B, N, E) ``data``) whose score is above ``score_threshold`` and whose
class id is not negative (``id_index < 0``: no id) to the front, in order; the
returns are the number of such boxes per batch, the rearranged data (the rest -1)
and each kept box's original index (the rest -1).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 3, 4, 4))
>>> multibox_prior(x, sizes=(0.5, 0.25)).attrs.sizes
(0.5, 0.25)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant, Expr, TupleWrapper
from relaykit.ir.types import TensorType, TupleType, Type

from ._relations import FLOAT_DTYPES, static, tensor_arg
from .define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["get_valid_counts", "multibox_prior", "roi_pool", "yolo_reorg"]


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


# -- yolo_reorg -----------------------------------------------------------------------------------


def _reorg_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    s = int(attrs.stride)
    if data.ndim != 4 or s <= 0:
        raise TypeRelError(f"yolo_reorg needs 4-D NCHW data and a positive stride, got {data}")
    n, c, h, w = data.shape
    if any(static(d) and d % k for d, k in ((c, s * s), (h, s), (w, s))):
        raise TypeRelError(
            f"yolo_reorg stride {s}: channels {c} must divide by {s * s} and {h}x{w} by {s}"
        )
    return TensorType((n, c * s * s, h // s, w // s), data.dtype)


def _reorg_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    n, c, h, w = x.shape
    s = int(attrs.stride)
    y = x.reshape(n, c // (s * s), h, s, w, s).transpose(0, 3, 5, 1, 2, 4)
    return np.ascontiguousarray(y.reshape(n, c * s * s, h // s, w // s))


define_op(
    "vision.yolo_reorg",
    num_inputs=1,
    attrs={"stride": 1},
    attrs_type_key="relay.attrs.YoloReorgAttrs",
    type_rel=_reorg_rel,
    compute=_reorg_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Darknet's reorg layer.",
)


def yolo_reorg(data: Expr, stride: int) -> Call:
    """Darknet's ``reorg``: ``stride x stride`` tiles into channel groups."""
    return make_call("vision.yolo_reorg", [data], stride=int(stride))


# -- multibox_prior -------------------------------------------------------------------------------


def _prior_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.ndim != 4 or data.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"multibox_prior needs a float NCHW feature map, got {data}")
    if not attrs.sizes or not attrs.ratios:
        raise TypeRelError("multibox_prior needs at least one size and one ratio")
    per_pixel = len(attrs.sizes) + len(attrs.ratios) - 1
    return TensorType((1, data.shape[2] * data.shape[3] * per_pixel, 4), data.dtype)


def _prior_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    h, w = inputs[0].shape[2:]
    sizes = [float(v) for v in attrs.sizes]
    ratios = [float(v) for v in attrs.ratios]
    step_h = attrs.steps[0] if attrs.steps[0] > 0 else 1.0 / h
    step_w = attrs.steps[1] if attrs.steps[1] > 0 else 1.0 / w
    # half extents per anchor kind: the sizes at ratio 1, then the other ratios at sizes[0]
    half_w = [s * h / w / 2 for s in sizes]
    half_h = [s / 2 for s in sizes]
    half_w += [sizes[0] * h / w * math.sqrt(r) / 2 for r in ratios[1:]]
    half_h += [sizes[0] / math.sqrt(r) / 2 for r in ratios[1:]]
    cy = (np.arange(h) + float(attrs.offsets[0])) * step_h
    cx = (np.arange(w) + float(attrs.offsets[1])) * step_w
    cyy, cxx = np.meshgrid(cy, cx, indexing="ij")  # (H, W)
    hw, hh = np.array(half_w), np.array(half_h)  # (K,)
    boxes = np.stack(
        [
            cxx[..., None] - hw,
            cyy[..., None] - hh,
            cxx[..., None] + hw,
            cyy[..., None] + hh,
        ],
        axis=-1,
    ).reshape(1, -1, 4)
    if attrs.clip:
        boxes = np.clip(boxes, 0.0, 1.0)
    return boxes.astype(inputs[0].dtype)


define_op(
    "vision.multibox_prior",
    num_inputs=1,
    attrs={
        "sizes": (1.0,),
        "ratios": (1.0,),
        "steps": (-1.0, -1.0),
        "offsets": (0.5, 0.5),
        "clip": False,
    },
    attrs_type_key="relay.attrs.MultiBoxPriorAttrs",
    type_rel=_prior_rel,
    compute=_prior_kernel,
    pattern=OpPattern.OPAQUE,
    doc="SSD prior (anchor) boxes of a feature map.",
)


def multibox_prior(
    data: Expr,
    sizes: Sequence[float] = (1.0,),
    ratios: Sequence[float] = (1.0,),
    steps: Sequence[float] = (-1.0, -1.0),
    offsets: Sequence[float] = (0.5, 0.5),
    clip: bool = False,
) -> Call:
    """SSD anchor boxes ``(left, top, right, bottom)`` for each pixel of ``data``."""
    return make_call(
        "vision.multibox_prior",
        [data],
        sizes=tuple(float(v) for v in sizes),
        ratios=tuple(float(v) for v in ratios),
        steps=tuple(float(v) for v in steps),
        offsets=tuple(float(v) for v in offsets),
        clip=bool(clip),
    )


# -- get_valid_counts -----------------------------------------------------------------------------


def _valid_counts_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.ndim != 3:
        raise TypeRelError(f"get_valid_counts data must be (batch, boxes, elements), got {data}")
    e = data.shape[2]
    for what in ("score_index", "id_index"):
        i = int(getattr(attrs, what))
        if i >= e or (what == "score_index" and i < 0):
            raise TypeRelError(f"get_valid_counts {what}={i} is out of range for {e} elements")
    b, n = data.shape[:2]
    return TupleType([TensorType((b,), "int32"), data, TensorType((b, n), "int32")])


def _valid_counts_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    data = inputs[0]
    b, n, _ = data.shape
    keep = data[:, :, int(attrs.score_index)] > float(attrs.score_threshold or 0.0)
    if int(attrs.id_index) >= 0:
        keep &= data[:, :, int(attrs.id_index)] >= 0
    counts = keep.sum(axis=1).astype(np.int32)
    out = np.full_like(data, -1)
    index = np.full((b, n), -1, dtype=np.int32)
    for i in range(b):
        kept = np.flatnonzero(keep[i])
        out[i, : len(kept)] = data[i, kept]
        index[i, : len(kept)] = kept
    return counts, out, index


define_op(
    "vision.get_valid_counts",
    num_inputs=1,
    num_outputs=3,
    attrs={"score_threshold": None, "id_index": 0, "score_index": 1},
    attrs_type_key="relay.attrs.GetValidCountsAttrs",
    type_rel=_valid_counts_rel,
    compute=_valid_counts_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Move the boxes above a score threshold to the front.",
)


def get_valid_counts(
    data: Expr, score_threshold: float | Expr, id_index: int = 0, score_index: int = 1
) -> TupleWrapper:
    """``(valid_count, data, indices)``: boxes scoring above ``score_threshold`` first."""
    if isinstance(score_threshold, Constant):
        score_threshold = float(score_threshold.data.numpy())
    elif isinstance(score_threshold, Expr):
        raise TypeRelError(
            "get_valid_counts needs a constant score_threshold (a number or relay.const)"
        )
    call = make_call(
        "vision.get_valid_counts",
        [data],
        score_threshold=float(score_threshold),
        id_index=int(id_index),
        score_index=int(score_index),
    )
    return TupleWrapper(call, 3)
