"""Non-maximum suppression (TVM's ``vision/nms.py``): ``vision.get_valid_counts``,
``vision.non_max_suppression`` (TVM's, after ``get_valid_counts``) and
``vision.all_class_non_max_suppression`` (ONNX-style).

``non_max_suppression(data, valid_count, indices, max_output_size)`` takes boxes as
rows of ``data`` (batch, anchors, elements): the class id at ``id_index``, the score
at ``score_index`` and ``x1, y1, x2, y2`` from ``coord_start``. Per batch, the first
``valid_count`` rows are sorted by score (descending), the ``top_k`` best kept, and a
box is dropped when it overlaps a better kept one (of the same class unless
``force_suppress``) with IoU >= ``iou_threshold``; at most ``max_output_size`` (if
>= 0) boxes survive. The result is either the surviving rows, best first, with the
other rows all ``-1``, or (``return_indices``) their original positions,
``indices[b, row]``, padded with ``-1``, and their count.

``get_valid_counts(data, score_threshold, id_index, score_index)`` moves the boxes
(rows of the (B, N, E) ``data``) whose score is above ``score_threshold`` and whose
class id is not negative (``id_index < 0``: no id) to the front, in order; the
returns are the number of such boxes per batch, the rearranged data (the rest -1)
and each kept box's original index (the rest -1).

>>> import numpy as np
>>> rows = [[0, 0.9, 0, 0, 2, 2], [0, 0.8, 0, 0, 2, 2.1], [0, 0.7, 5, 5, 6, 6]]
>>> boxes = np.array([rows], "float32")
>>> nms_boxes(boxes, np.array([3]), np.arange(3)[None], -1, 0.5, False, -1, 2, 1, 0)[0].tolist()
[[0, 2, -1]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant, Expr, TupleWrapper, const
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op._relations import INT_DTYPES, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = [
    "all_class_non_max_suppression",
    "get_valid_counts",
    "iou",
    "nms_boxes",
    "non_max_suppression",
]


def iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Intersection over union of ``box`` (x1, y1, x2, y2) with each row of ``others``;
    0 where the union is empty."""
    w = np.maximum(0.0, np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]))
    h = np.maximum(0.0, np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]))
    inter = w * h
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + areas - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def _keep(
    boxes: np.ndarray,
    order: np.ndarray,
    ids: np.ndarray | None,
    iou_threshold: float,
    max_out: int,
) -> list[int]:
    """Positions (into ``order``'s boxes) that survive greedy suppression, best first."""
    kept: list[int] = []
    alive = np.ones(len(order), dtype=bool)
    for i, row in enumerate(order):
        if not alive[i]:
            continue
        kept.append(int(row))
        if 0 <= max_out <= len(kept):
            break
        rest = order[i + 1 :]
        overlap = iou(boxes[row], boxes[rest]) >= iou_threshold
        if ids is not None:
            overlap &= ids[rest] == ids[row]
        alive[i + 1 :] &= ~overlap
    return kept


def nms_boxes(
    data: np.ndarray,
    valid_count: np.ndarray,
    indices: np.ndarray,
    max_output_size: int,
    iou_threshold: float,
    force_suppress: bool,
    top_k: int,
    coord_start: int,
    score_index: int,
    id_index: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(box_indices, valid_box_count, rows)``: per batch, the original positions of the
    surviving boxes (padded with -1), their count, and their rows of ``data`` in order."""
    batch, anchors = data.shape[:2]
    out_idx = np.full((batch, anchors), -1, dtype=np.int32)
    counts = np.zeros((batch, 1), dtype=np.int32)
    rows = np.full((batch, anchors), -1, dtype=np.int64)
    for b in range(batch):
        n = int(valid_count[b])
        scores = data[b, :n, score_index].astype(np.float64)
        order = np.argsort(-scores, kind="stable")
        order = order[scores[order] > 0]  # a score <= 0 marks an invalid box
        if top_k >= 0:
            order = order[:top_k]
        boxes = data[b, :, coord_start : coord_start + 4].astype(np.float64)
        ids = None if force_suppress or id_index < 0 else data[b, :, id_index]
        kept = _keep(boxes, order, ids, float(iou_threshold), int(max_output_size))
        counts[b, 0] = len(kept)
        rows[b, : len(kept)] = kept
        out_idx[b, : len(kept)] = indices[b, kept]
    return out_idx, counts, rows


# -- vision.non_max_suppression -------------------------------------------------------------------


def _nms_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    valid = tensor_arg(arg_types, 1, "valid_count")
    idx = tensor_arg(arg_types, 2, "indices")
    max_out = tensor_arg(arg_types, 3, "max_output_size")
    if data.ndim != 3:
        raise TypeRelError(f"data must be (batch, anchors, elements), got {data}")
    if not attrs.return_indices:  # the positions are read only to be returned
        idx = TensorType((data.shape[0], data.shape[1]), "int32")
    if valid.ndim != 1 or idx.ndim != 2 or max_out.ndim != 0:
        raise TypeRelError(
            f"valid_count must be 1-D, indices 2-D and max_output_size a scalar; got "
            f"{valid}, {idx}, {max_out}"
        )
    if any(t.dtype not in INT_DTYPES for t in (valid, idx, max_out)):
        raise TypeRelError("valid_count, indices and max_output_size must be integer tensors")
    if attrs.return_indices:
        return TupleType(
            [
                TensorType(data.shape[:2], "int32"),
                TensorType((data.shape[0], 1), "int32"),
            ]
        )
    return data


def _nms_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> Any:
    data, valid, idx, max_out = ins
    if not attrs.return_indices:
        idx = np.broadcast_to(np.arange(data.shape[1]), data.shape[:2])
    out_idx, counts, rows = nms_boxes(
        data,
        valid,
        idx,
        int(max_out),
        attrs.iou_threshold,
        attrs.force_suppress,
        attrs.top_k,
        attrs.coord_start,
        attrs.score_index,
        attrs.id_index,
    )
    if attrs.return_indices:
        return out_idx, counts
    out = np.full_like(data, -1)
    for b in range(data.shape[0]):
        k = int(counts[b, 0])
        out[b, :k] = data[b, rows[b, :k]]
    return out


define_op(
    "vision.non_max_suppression",
    num_inputs=4,
    attrs={
        "force_suppress": False,
        "iou_threshold": 0.5,
        "top_k": -1,
        "coord_start": 2,
        "score_index": 1,
        "id_index": 0,
        "return_indices": True,
        "invalid_to_bottom": False,
    },
    attrs_type_key="relay.attrs.NonMaximumSuppressionAttrs",
    type_rel=_nms_rel,
    compute=_nms_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Greedy non-maximum suppression of scored boxes (see the module docstring).",
)


def non_max_suppression(
    data: Expr,
    valid_count: Expr,
    indices: Expr,
    max_output_size: Expr | int = -1,
    iou_threshold: float = 0.5,
    force_suppress: bool = False,
    top_k: int = -1,
    coord_start: int = 2,
    score_index: int = 1,
    id_index: int = 0,
    return_indices: bool = True,
    invalid_to_bottom: bool = False,
) -> Call | TupleWrapper:
    """Suppress overlapping boxes (see the module docstring); ``(box_indices,
    valid_box_count)`` with ``return_indices``, else the surviving boxes' rows."""
    if not isinstance(max_output_size, Expr):
        max_output_size = const(int(max_output_size), "int32")
    call = make_call(
        "vision.non_max_suppression",
        [data, valid_count, indices, max_output_size],
        force_suppress=bool(force_suppress),
        iou_threshold=float(iou_threshold),
        top_k=int(top_k),
        coord_start=int(coord_start),
        score_index=int(score_index),
        id_index=int(id_index),
        return_indices=bool(return_indices),
        invalid_to_bottom=bool(invalid_to_bottom),
    )
    return TupleWrapper(call, 2) if return_indices else call


# -- vision.all_class_non_max_suppression ---------------------------------------------------------


def _all_class_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    boxes = tensor_arg(arg_types, 0, "boxes")
    scores = tensor_arg(arg_types, 1, "scores")
    for i, name in ((2, "max_output_boxes_per_class"), (3, "iou_threshold")):
        tensor_arg(arg_types, i, name)
    tensor_arg(arg_types, 4, "score_threshold")
    if boxes.ndim != 3 or scores.ndim != 3:
        raise TypeRelError(f"boxes must be (B, N, 4) and scores (B, C, N), got {boxes}, {scores}")
    if attrs.output_format != "onnx":
        raise TypeRelError(
            f"all_class_non_max_suppression supports output_format='onnx', got "
            f"{attrs.output_format!r}"
        )
    rows = scores.shape[0] * scores.shape[1] * boxes.shape[1]
    return TupleType([TensorType((rows, 3), "int64"), TensorType((1,), "int64")])


def _all_class_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, np.ndarray]:
    boxes, scores, max_out, iou_t, score_t = ins
    b = boxes.astype(np.float64)  # any two opposite corners: (y1, x1, y2, x2) normalised
    lo, hi = np.minimum(b[..., :2], b[..., 2:]), np.maximum(b[..., :2], b[..., 2:])
    corners = np.concatenate([lo, hi], axis=-1)
    batch, classes, n = scores.shape
    selected: list[tuple[int, int, int]] = []
    limit = int(max_out)
    for bi in range(batch):
        for ci in range(classes):
            s = scores[bi, ci].astype(np.float64)
            order = np.argsort(-s, kind="stable")
            order = order[s[order] > float(score_t)]
            kept = _keep(corners[bi], order, None, float(iou_t), limit if limit >= 0 else -1)
            if limit == 0:
                kept = []
            selected.extend((bi, ci, k) for k in kept)
    out = np.zeros((batch * classes * n, 3), dtype=np.int64)
    if selected:
        out[: len(selected)] = np.array(selected, dtype=np.int64)
    return out, np.array([len(selected)], dtype=np.int64)


define_op(
    "vision.all_class_non_max_suppression",
    num_inputs=5,
    attrs={"output_format": "onnx"},
    attrs_type_key="relay.attrs.AllClassNonMaximumSuppressionAttrs",
    type_rel=_all_class_rel,
    compute=_all_class_kernel,
    pattern=OpPattern.OPAQUE,
    num_outputs=2,
    doc="Per-class non-maximum suppression (ONNX NonMaxSuppression's selection).",
)


def all_class_non_max_suppression(
    boxes: Expr,
    scores: Expr,
    max_output_boxes_per_class: Expr | int = -1,
    iou_threshold: Expr | float = -1.0,
    score_threshold: Expr | float = -1.0,
    output_format: str = "onnx",
) -> TupleWrapper:
    """``(selected_indices, num_detections)``: for each batch and class, the boxes
    (``boxes`` (B, N, 4), ``scores`` (B, C, N)) with a score above ``score_threshold``
    that survive greedy suppression at ``iou_threshold``, at most
    ``max_output_boxes_per_class`` of them, as ``(batch, class, box)`` rows (the first
    ``num_detections`` rows of a (B*C*N, 3) ``int64`` tensor)."""
    args = [
        v if isinstance(v, Expr) else const(v, dt)
        for v, dt in (
            (max_output_boxes_per_class, "int64"),
            (iou_threshold, "float32"),
            (score_threshold, "float32"),
        )
    ]
    call = make_call(
        "vision.all_class_non_max_suppression",
        [boxes, scores, *args],
        output_format=str(output_format),
    )
    return TupleWrapper(call, 2)


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
