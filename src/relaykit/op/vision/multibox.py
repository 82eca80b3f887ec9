"""SSD's multibox operators (TVM's ``vision/multibox.py``): ``vision.multibox_prior``
and ``vision.multibox_transform_loc``.

``multibox_prior(data, sizes, ratios, steps, offsets, clip)`` makes SSD's anchor
boxes ``(left, top, right, bottom)`` for each pixel of the (N, C, H, W) feature map:
one per size (aspect ratio 1) and one per further ratio (with the first size),
centred at ``(pixel + offset) * step``; a step of -1 means ``1 / H`` (``1 / W``).

``multibox_transform_loc(cls_prob, loc_pred, anchor)`` decodes SSD's box regression:
per anchor, the best class, its score and the regressed box.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 3, 4, 4))
>>> multibox_prior(x, sizes=(0.5, 0.25)).attrs.sizes
[0.5, 0.25]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, TupleWrapper
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op._relations import FLOAT_DTYPES, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["multibox_prior", "multibox_transform_loc"]


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


# -- vision.multibox_transform_loc ----------------------------------------------------------------


def _mtl_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    cls_prob = tensor_arg(arg_types, 0, "cls_prob")
    loc = tensor_arg(arg_types, 1, "loc_pred")
    anchor = tensor_arg(arg_types, 2, "anchor")
    if cls_prob.ndim != 3 or loc.ndim != 2 or anchor.ndim != 3:
        raise TypeRelError(
            f"cls_prob must be (batch, classes, anchors), loc_pred (batch, anchors*4) and "
            f"anchor (1, anchors, 4); got {cls_prob}, {loc}, {anchor}"
        )
    batch, anchors = cls_prob.shape[0], cls_prob.shape[2]
    return TupleType(
        [TensorType((batch, anchors, 6), cls_prob.dtype), TensorType((batch,), "int32")]
    )


def _decode(loc: np.ndarray, anchors: np.ndarray, attrs: Attrs) -> np.ndarray:
    """Centre-offset box regression: (A, 4) deltas on (A, 4) corner anchors -> corners."""
    vx, vy, vw, vh = (float(v) for v in attrs.variances)
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = (anchors[:, 0] + anchors[:, 2]) / 2, (anchors[:, 1] + anchors[:, 3]) / 2
    ox, oy = loc[:, 0] * vx * aw + ax, loc[:, 1] * vy * ah + ay
    ow, oh = np.exp(loc[:, 2] * vw) * aw / 2, np.exp(loc[:, 3] * vh) * ah / 2
    box = np.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=1)
    return np.clip(box, 0.0, 1.0) if attrs.clip else box


def _mtl_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, np.ndarray]:
    cls_prob, loc_pred, anchor = (a.astype(np.float64) for a in ins)
    batch, _, anchors = cls_prob.shape
    out = np.full((batch, anchors, 6), -1.0)
    valid = np.zeros((batch,), dtype=np.int32)
    first = 0 if attrs.keep_background else 1
    for b in range(batch):
        probs = cls_prob[b, first:]  # (classes considered, anchors)
        cls = np.argmax(probs, axis=0) + first  # the first of equal maxima
        score = probs.max(axis=0)
        cls = np.where((cls > 0) & (score < float(attrs.threshold)), 0, cls)
        keep = np.ones(anchors, dtype=bool) if attrs.keep_background else cls > 0
        boxes = _decode(loc_pred[b].reshape(anchors, 4), anchor[0], attrs)
        n = int(keep.sum())
        out[b, :n, 0] = cls[keep] - first
        out[b, :n, 1] = score[keep]
        out[b, :n, 2:] = boxes[keep]
        valid[b] = n
    return out.astype(ins[0].dtype), valid


define_op(
    "vision.multibox_transform_loc",
    num_inputs=3,
    attrs={
        "clip": True,
        "threshold": 0.01,
        "variances": (0.1, 0.1, 0.2, 0.2),
        "keep_background": False,
    },
    attrs_type_key="relay.attrs.MultiBoxTransformLocAttrs",
    type_rel=_mtl_rel,
    compute=_mtl_kernel,
    pattern=OpPattern.OPAQUE,
    num_outputs=2,
    doc="SSD box decoding: per anchor the best class, its score and the regressed box.",
)


def multibox_transform_loc(
    cls_prob: Expr,
    loc_pred: Expr,
    anchor: Expr,
    clip: bool = True,
    threshold: float = 0.01,
    variances: Sequence[float] = (0.1, 0.1, 0.2, 0.2),
    keep_background: bool = False,
) -> TupleWrapper:
    """``(boxes, valid_count)`` for SSD: per anchor, the best class of ``cls_prob`` (batch,
    classes, anchors) -- class 0, the background, skipped unless ``keep_background``,
    and ids shifted down by one then; below ``threshold`` an anchor counts as background
    -- its score and the box ``loc_pred`` regresses from ``anchor`` (centre offsets
    scaled by ``variances``, clipped to [0, 1] with ``clip``), as rows ``[id, score, x1,
    y1, x2, y2]`` packed first (the rest -1), and how many rows are valid."""
    call = make_call(
        "vision.multibox_transform_loc",
        [cls_prob, loc_pred, anchor],
        clip=bool(clip),
        threshold=float(threshold),
        variances=tuple(float(v) for v in variances),
        keep_background=bool(keep_background),
    )
    return TupleWrapper(call, 2)
