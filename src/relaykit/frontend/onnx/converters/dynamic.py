"""ONNX converters for ops whose output *shape* depends on input values:
``NonMaxSuppression`` and ``Unique``.

With constant inputs they are evaluated at import (their results become constants);
otherwise they become the data-dependent operators ``dyn.non_max_suppression`` and
``dyn.unique`` (:mod:`relaykit.op.dyn`), whose results have ``?`` dimensions and
run on the Relay VM.

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

from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr, TupleGetItem
from relaykit.op import dyn

from .common import normalize_axis

__all__ = ["non_max_suppression", "unique"]


def non_max_suppression(
    boxes: np.ndarray,
    scores: np.ndarray,
    max_output: int,
    iou_threshold: float,
    score_threshold: float | None,
    center_point_box: int,
) -> np.ndarray:
    """ONNX ``NonMaxSuppression`` on NumPy arrays (``dyn.non_max_suppression``'s kernel)."""
    return dyn.vision.non_max_suppression_ref(
        boxes, scores, max_output, iou_threshold, score_threshold, center_point_box
    )


def _runtime(ctx: NodeContext, *inputs: Expr | None) -> bool:
    return not all(ctx.is_constant(e) for e in inputs if e is not None)


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
    args = (boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold)
    if _runtime(ctx, *args):  # selected at run time: dyn.non_max_suppression
        empty = Constant(np.zeros(0, "float32"))
        limit = (
            max_output_boxes_per_class
            if max_output_boxes_per_class is not None
            else Constant(np.zeros(0, "int64"))
        )
        return dyn.non_max_suppression(
            boxes,
            scores,
            limit,
            iou_threshold if iou_threshold is not None else empty,
            score_threshold if score_threshold is not None else empty,
            int(center_point_box),
            score_threshold is not None,
        )
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
    """ONNX ``Unique`` on a NumPy array (``dyn.unique``'s kernel): the unique values, the
    first occurrences, the inverse indices and the counts."""
    return dyn.transform.unique_ref(x, axis, sorted_)


@converter("Unique", 11)
def _unique(ctx: NodeContext, x: Expr, *, axis: Any = None, sorted: int = 1) -> list[Expr]:
    if _runtime(ctx, x):
        a = None if axis is None else normalize_axis(ctx, axis, ctx.ndim(x))
        out = dyn.unique(x, a, bool(sorted))
        return [TupleGetItem(out, k) for k in range(4)]
    value = np.asarray(ctx.value(x, "X"))
    a = None if axis is None else normalize_axis(ctx, axis, value.ndim)
    return [Constant(np.ascontiguousarray(v)) for v in unique(value, a, bool(sorted))]
