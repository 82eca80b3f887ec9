"""Helpers shared by the TFLite converters: SAME / VALID padding and fused activations.

>>> padding_of(0, (5, 5), (3, 3), (2, 2), (1, 1))
(1, 1, 1, 1)
>>> padding_of(1, (5, 5), (3, 3), (2, 2), (1, 1))
(0, 0, 0, 0)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit import op
from relaykit.frontend.common import same_pads
from relaykit.frontend.tflite.quantized import (
    activation_bounds,
    dequantize,
    is_quantized,
    quantize,
)
from relaykit.frontend.tflite.registry import OpContext
from relaykit.frontend.tflite.schema import activation_name
from relaykit.ir.expr import Expr

__all__ = ["fused_activation", "padding_of"]

_SAME, _VALID = 0, 1


def padding_of(
    code: int,
    in_sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` of TFLite's ``Padding`` (0 SAME, 1 VALID): SAME
    puts the odd pixel at the end, as TensorFlow does."""
    if int(code) != _SAME:
        return (0, 0, 0, 0)
    (top, bottom), (left, right) = (
        same_pads(int(n), int(k), int(s), int(d))
        for n, k, s, d in zip(in_sizes, kernel, strides, dilations, strict=False)
    )
    return (top, left, bottom, right)


def fused_activation(ctx: OpContext, x: Expr, code: int) -> Expr:
    """``x`` with the fused activation function ``code`` of the operator applied: float
    activations directly, quantized ones as a clip in the output's quantized domain."""
    name = activation_name(code)
    if name == "NONE":
        return x
    out = ctx.outputs[0]
    if is_quantized(out):
        if name == "TANH":
            return quantize(ctx, op.tanh(dequantize(ctx, x, out)), out)
        if name not in ("RELU", "RELU6", "RELU_N1_TO_1"):
            raise ctx.fail(f"its fused activation {name} is not supported on quantized tensors")
        lo, hi = activation_bounds(name, out)
        info = np.iinfo(np.dtype(out.dtype))
        if (lo, hi) == (info.min, info.max):
            return x
        return op.clip(x, lo, hi)
    if name == "RELU":
        return op.nn.relu(x)
    if name == "RELU6":
        return op.clip(x, 0.0, 6.0)
    if name == "RELU_N1_TO_1":
        return op.clip(x, -1.0, 1.0)
    if name == "TANH":
        return op.tanh(x)
    raise ctx.fail(f"its fused activation {name} is not supported")
