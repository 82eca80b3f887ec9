"""TFLite converters: ``QUANTIZE`` (float to integer as ``qnn.quantize``, integer to
integer as ``qnn.requantize``), ``DEQUANTIZE`` (``qnn.dequantize``; a float16 constant
is widened at import) and ``CAST``.
"""

from __future__ import annotations

import numpy as np

from relaykit import op
from relaykit.frontend.tflite.quantized import (
    COMPUTE,
    ROUNDING,
    dequantize,
    dequantize_array,
    is_quantized,
    quantize,
    scale_const,
    zero_point_const,
)
from relaykit.frontend.tflite.registry import OpContext, converter
from relaykit.ir.expr import Constant, Expr

__all__: list[str] = []


@converter("QUANTIZE")
def _quantize(ctx: OpContext) -> Expr:
    t, out = ctx.tensor(0), ctx.outputs[0]
    x = ctx.expr(0)
    if not is_quantized(out):
        raise ctx.fail(f"its output '{out.name}' carries no quantization parameters")
    if not is_quantized(t):
        return quantize(ctx, x, out)
    return op.qnn.requantize(
        x,
        scale_const(ctx, t),
        zero_point_const(ctx, t),
        scale_const(ctx, out),
        zero_point_const(ctx, out),
        rounding=ROUNDING,
        compute_dtype=COMPUTE,
        out_dtype=out.dtype,
    )


@converter("DEQUANTIZE")
def _dequantize(ctx: OpContext) -> Expr:
    t = ctx.tensor(0)
    if t.dtype == "float16":
        if t.data is not None:
            return Constant(t.data.astype(np.float32))
        return op.cast(ctx.expr(0), "float32")
    if t.quant is None:
        raise ctx.fail(f"its input '{t.name}' ({t.dtype}) carries no quantization parameters")
    if t.data is not None:  # a quantized constant (weights of a hybrid model): at import
        return Constant(dequantize_array(t))
    return dequantize(ctx, ctx.expr(0), t)


@converter("CAST")
def _cast(ctx: OpContext) -> Expr:
    return op.cast(ctx.expr(0), ctx.outputs[0].dtype)
