"""Vision operators with run-time sizes or data-dependent outputs: N-D resize by sizes or
scales, non-max suppression (ONNX semantics), col2im and affine grids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import normalize_axis, tensor_arg
from relaykit.op.define import TypeRelError, make_call

from ._base import define_dyn_op, define_kernel_op, ints, shape_input, unknown

__all__ = [
    "affine_grid",
    "affine_base_grid",
    "affine_grid_ref",
    "col2im",
    "col2im_ref",
    "image_resize",
    "non_max_suppression",
    "non_max_suppression_ref",
    "resize_sizes",
]


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


def affine_base_grid(spatial: Sequence[int], align_corners: bool) -> np.ndarray:
    """The (P, r + 1) homogeneous normalised coordinates (x first, then a column of ones)
    of every point of a grid of ``spatial`` sizes, as ONNX ``AffineGrid`` places them."""
    axes = []
    for d in spatial:
        if align_corners:
            axes.append(np.linspace(-1.0, 1.0, d) if d > 1 else np.zeros(1))
        else:
            axes.append((2 * np.arange(d) + 1) / d - 1)
    mesh = np.meshgrid(*axes, indexing="ij")  # per spatial axis, in (D,) H, W order
    coords = [m.reshape(-1) for m in reversed(mesh)]  # x first, as the grid stores it
    return np.stack([*coords, np.ones_like(coords[0])], axis=1)


def affine_grid_ref(theta: np.ndarray, size: Sequence[int], align_corners: bool) -> np.ndarray:
    """ONNX ``AffineGrid``: the (N, *spatial, r) sampling grid of the affine maps
    ``theta`` (N, r, r + 1) over normalised coordinates of the spatial sizes."""
    n, spatial = size[0], size[2:]
    base = affine_base_grid(spatial, align_corners)
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
