"""``relay.op.dyn.vision``: ``dyn.non_max_suppression``, ONNX's NonMaxSuppression with
run-time limits and thresholds and a data-dependent number of selected boxes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import tensor_arg
from relaykit.op.define import TypeRelError, make_call

from ._base import define_dyn_op

__all__ = ["non_max_suppression", "non_max_suppression_ref"]


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


define_dyn_op(
    "dyn.non_max_suppression",
    5,
    _nms_rel,
    kernel=_nms_kernel,
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
