"""ONNX converters: region-of-interest ops (``RoiAlign``)."""

from __future__ import annotations

from relaykit import op
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Expr

__all__: list[str] = []


@converter("RoiAlign", 10)
def _roi_align(
    ctx: NodeContext,
    x: Expr,
    rois: Expr,
    batch_indices: Expr,
    *,
    coordinate_transformation_mode: str = "output_half_pixel",
    mode: str = "avg",
    output_height: int = 1,
    output_width: int = 1,
    sampling_ratio: int = 0,
    spatial_scale: float = 1.0,
) -> Expr:
    if coordinate_transformation_mode not in ("half_pixel", "output_half_pixel"):
        raise ctx.unsupported(f"coordinate_transformation_mode={coordinate_transformation_mode!r}")
    dt = ctx.dtype(x)
    index = op.expand_dims(op.cast(batch_indices, dt), 1)
    boxes = op.concatenate([index, rois if ctx.dtype(rois) == dt else op.cast(rois, dt)], 1)
    return op.vision.roi_align(
        x,
        boxes,
        pooled_size=(output_height, output_width),
        spatial_scale=spatial_scale,
        sample_ratio=sampling_ratio,
        mode=mode.lower(),
        aligned=coordinate_transformation_mode == "half_pixel",
        max_over_corners=True,  # ONNX Runtime's max mode
    )
