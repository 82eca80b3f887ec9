"""Converters of ``quantized_decomposed::*``, the quantize / dequantize operators of
exported (``torch.export``) quantized graphs: integer tensors with the quantization
given as arguments, quantize -> dequantize pairs around float operators (the QDQ form).
They become ``qnn.quantize`` / ``qnn.dequantize`` (a ``clip`` when ``quant_min`` /
``quant_max`` narrow the dtype's range); ``relay.transform.FakeQuantizationToInteger``
then folds the pairs into integer QNN operators when wanted.

>>> from relaykit.frontend.pytorch.registry import CONVERTERS
>>> "quantized_decomposed::dequantize_per_channel" in CONVERTERS
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr, const
from relaykit.op import qnn

from .ops_quantized import constant_arg
from .quantized import EVEN, qrange
from .registry import OpContext, converter, dtype_name

__all__: list[str] = []

_NS = "quantized_decomposed::"


def _dtype(ctx: OpContext, value: Any) -> str:
    dtype = dtype_name(value)
    if dtype not in ("int8", "uint8", "int16", "int32"):
        raise ctx.fail(f"quantized dtype {value!r} is not supported (int8, uint8, int16, int32)")
    return dtype


def _params(ctx: OpContext, scale: Any, zp: Any, per_channel: bool) -> tuple[Expr, Expr]:
    s = constant_arg(ctx, scale, "scale").astype("float32")
    z = (
        np.zeros(s.shape, "int32")
        if zp is None
        else constant_arg(ctx, zp, "zero point").astype("int32")
    )
    if not per_channel:
        s, z = s.reshape(()), z.reshape(())
    else:
        s, z = s.reshape(-1), np.broadcast_to(z.reshape(-1), s.reshape(-1).shape).copy()
    return const(s, "float32"), const(z, "int32")


def _quantize(ctx: OpContext, args: list[Any], per_channel: bool) -> Expr:
    if per_channel:
        x, scale, zp, axis, qmin, qmax, dtype = args[:7]
        axis = ctx.axis(x, int(axis))
    else:
        x, scale, zp, qmin, qmax, dtype = args[:6]
        axis = -1
    dt = _dtype(ctx, dtype)
    s, z = _params(ctx, scale, zp, per_channel)
    q = qnn.quantize(ctx.expr(x), s, z, axis, dt, rounding=EVEN)
    lo, hi = qrange(dt)
    if (int(qmin), int(qmax)) != (lo, hi):
        q = op.clip(q, int(qmin), int(qmax))
    return q


def _dequantize(ctx: OpContext, args: list[Any], per_channel: bool) -> Expr:
    if per_channel:
        x, scale, zp, axis = args[:4]
        axis = ctx.axis(x, int(axis))
        rest = args[4:]
    else:
        x, scale, zp = args[:3]
        axis = -1
        rest = args[3:]
    out_dtype = dtype_name(rest[3] if len(rest) > 3 else None, "float32")
    s, z = _params(ctx, scale, zp, per_channel)
    y = qnn.dequantize(ctx.expr(x), s, z, axis)
    return y if out_dtype == "float32" else op.cast(y, str(out_dtype))


@converter(_NS + "quantize_per_tensor")
def _quantize_per_tensor(ctx: OpContext, args: list[Any]) -> Expr:
    return _quantize(ctx, args, per_channel=False)


@converter(_NS + "quantize_per_channel")
def _quantize_per_channel(ctx: OpContext, args: list[Any]) -> Expr:
    return _quantize(ctx, args, per_channel=True)


@converter(_NS + "dequantize_per_tensor")
def _dequantize_per_tensor(ctx: OpContext, args: list[Any]) -> Expr:
    return _dequantize(ctx, args, per_channel=False)


@converter(_NS + "dequantize_per_channel")
def _dequantize_per_channel(ctx: OpContext, args: list[Any]) -> Expr:
    return _dequantize(ctx, args, per_channel=True)
