"""TFLite converters: ``RESIZE_BILINEAR`` and ``RESIZE_NEAREST_NEIGHBOR`` (NHWC), with
TensorFlow's ``align_corners`` and ``half_pixel_centers``. A quantized bilinear resize
interpolates in float32 between a dequantize and a quantize; a nearest one moves the
quantized values.
"""

from __future__ import annotations

import numpy as np

from relaykit import op
from relaykit.frontend.tflite.quantized import through_float
from relaykit.frontend.tflite.registry import OpContext, converter
from relaykit.ir.expr import Expr

__all__: list[str] = []


def _size(ctx: OpContext) -> tuple[int, int]:
    v = [int(d) for d in np.asarray(ctx.value(1, "size")).reshape(-1)]
    return v[0], v[1]


@converter("RESIZE_BILINEAR")
def _bilinear(ctx: OpContext) -> Expr:
    opts = ctx.options("ResizeBilinearOptions")
    align = bool(opts.AlignCorners())
    half = bool(opts.HalfPixelCenters())
    mode = "align_corners" if align else ("half_pixel" if half else "asymmetric")
    size = _size(ctx)
    return through_float(
        ctx,
        lambda v: op.image.resize2d(
            v, size, layout="NHWC", method="linear", coordinate_transformation_mode=mode
        ),
    )


@converter("RESIZE_NEAREST_NEIGHBOR")
def _nearest(ctx: OpContext) -> Expr:
    opts = ctx.options("ResizeNearestNeighborOptions")
    align = bool(opts.AlignCorners())
    half = bool(opts.HalfPixelCenters())
    if align:
        mode, rounding = "align_corners", "round_prefer_ceil"
    elif half:  # TensorFlow's floor((i + 0.5) * scale): half_pixel, halves rounded up
        mode, rounding = "half_pixel", "round_prefer_ceil"
    else:
        mode, rounding = "asymmetric", "floor"
    return op.image.resize2d(
        ctx.expr(0),
        _size(ctx),
        layout="NHWC",
        method="nearest_neighbor",
        coordinate_transformation_mode=mode,
        rounding_method=rounding,
    )
