"""ONNX converters for ops whose output *shape* depends on input values:
``NonMaxSuppression`` and ``Unique``.

relaykit's IR has static shapes, so these ops are evaluated at import, as ``NonZero``
is: their inputs must be known then (constants, initializers, or inputs bound with
``from_onnx(..., const_inputs=...)``); otherwise ``ctx.value`` raises
``DynamicShapeError`` naming the node, and the ONNX backend specialises the model to
the values it is run with (see ``docs/onnx.md``).

>>> import numpy as np
>>> boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6]]], "float32")
>>> scores = np.array([[[0.9, 0.8, 0.7]]], "float32")
>>> non_max_suppression(boxes, scores, 3, 0.5, None, 0).tolist()
[[0, 0, 0], [0, 0, 2]]
>>> [a.tolist() for a in unique(np.array([2, 1, 2, 3]), None, sorted_=False)]
[[2, 1, 3], [0, 1, 3], [0, 1, 0, 2], [2, 1, 1]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.ir.expr import Constant, Expr

from ._cvt_util import normalize_axis
from ._onnx_registry import NodeContext, converter

__all__ = ["non_max_suppression", "unique"]


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


def non_max_suppression(
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


@converter("NonMaxSuppression", 10)
def _non_max_suppression(
    ctx: NodeContext,
    boxes: Expr,
    scores: Expr,
    max_output_boxes_per_class: Expr | None = None,
    iou_threshold: Expr | None = None,
    score_threshold: Expr | None = None,
    *,
    center_point_box: int = 0,
) -> Expr:
    b = np.asarray(ctx.value(boxes, "boxes"))
    s = np.asarray(ctx.value(scores, "scores"))
    if b.ndim != 3 or b.shape[2] != 4 or s.ndim != 3 or s.shape[::2] != b.shape[:2]:
        raise ctx.fail(f"boxes must be (B, N, 4) and scores (B, C, N), got {b.shape}, {s.shape}")

    def optional(expr: Expr | None, what: str) -> Any:
        if expr is None:
            return None
        arr = np.asarray(ctx.value(expr, what)).reshape(-1)
        return arr[0] if arr.size else None

    limit = optional(max_output_boxes_per_class, "max_output_boxes_per_class")
    iou = optional(iou_threshold, "iou_threshold")
    score = optional(score_threshold, "score_threshold")
    out = non_max_suppression(
        b,
        s,
        max(int(limit), 0) if limit is not None else 0,
        float(iou) if iou is not None else 0.0,
        float(score) if score is not None else None,
        int(center_point_box),
    )
    return Constant(out)


def unique(
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


@converter("Unique", 11)
def _unique(ctx: NodeContext, x: Expr, *, axis: Any = None, sorted: int = 1) -> list[Expr]:
    value = np.asarray(ctx.value(x, "X"))
    a = None if axis is None else normalize_axis(ctx, axis, value.ndim)
    return [Constant(np.ascontiguousarray(v)) for v in unique(value, a, bool(sorted))]
