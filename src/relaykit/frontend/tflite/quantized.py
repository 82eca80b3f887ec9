"""Quantization parameters of TFLite tensors as QNN constants, and the quantized forms
shared by the converters: requantizing an int32 accumulator, fused activations as clips
in the quantized domain, and the float round trip (dequantize, the float operator,
quantize) for operators without an integer form.

TFLite's integer kernels requantize with a fixed-point multiplier and round halves away
from zero, which is ``qnn.requantize`` with ``rounding="TONEAREST"`` in int64.

>>> import numpy as np
>>> from relaykit.frontend.tflite.schema import QuantInfo, TensorInfo
>>> t = TensorInfo(0, "y", (1, 4), "int8", None, QuantInfo(np.float32(0.05), np.int64(-128), 0))
>>> activation_bounds("RELU6", t)
(-128, -8)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relaykit import op
from relaykit.errors import FrontendError
from relaykit.ir.expr import Constant, Expr

from .registry import OpContext
from .schema import QuantInfo, TensorInfo

__all__ = [
    "QUANTIZED_DTYPES",
    "dequantize_array",
    "ROUNDING",
    "activation_bounds",
    "dequantize",
    "is_quantized",
    "quantize",
    "requantize",
    "scale_const",
    "through_float",
    "zero_point_const",
]

QUANTIZED_DTYPES = ("int8", "uint8", "int16")
ROUNDING = "TONEAREST"
COMPUTE = "int64"


def is_quantized(t: TensorInfo | None) -> bool:
    """Whether ``t`` is an integer tensor carrying a scale and a zero point."""
    return t is not None and t.quant is not None and t.dtype in QUANTIZED_DTYPES


def _quant(ctx: OpContext, t: TensorInfo) -> QuantInfo:
    if t.quant is None:
        raise ctx.fail(
            f"tensor '{t.name}' ({t.dtype}) has no quantization parameters, but this "
            "quantized operator needs its scale and zero point"
        )
    return t.quant


def scale_const(ctx: OpContext, t: TensorInfo) -> Constant:
    """The scale of ``t`` as a float32 constant (a vector for per-axis quantization)."""
    s = np.asarray(_quant(ctx, t).scale, np.float32)
    if not (np.all(np.isfinite(s)) and np.all(s > 0)):
        raise ctx.fail(f"tensor '{t.name}' has a scale that is not finite and positive: {s}")
    return Constant(s.reshape(-1) if s.size > 1 else s.reshape(()))


def zero_point_const(ctx: OpContext, t: TensorInfo) -> Constant:
    """The zero point of ``t`` as an int32 constant (a scalar when all entries agree)."""
    z = np.asarray(_quant(ctx, t).zero_point, np.int64).reshape(-1)
    if z.size > 1 and np.all(z == z[0]):
        z = z[:1]
    return Constant(
        z.astype(np.int32).reshape(-1) if z.size > 1 else z.astype(np.int32).reshape(())
    )


def requantize(ctx: OpContext, acc: Expr, in_scale: np.ndarray, out: TensorInfo, axis: int) -> Expr:
    """The int32 ``acc`` (scale ``in_scale``, zero point 0) in ``out``'s quantization."""
    s = np.asarray(in_scale, np.float32)
    return op.qnn.requantize(
        acc,
        Constant(s.reshape(-1) if s.size > 1 else s.reshape(())),
        Constant(np.array(0, np.int32)),
        scale_const(ctx, out),
        zero_point_const(ctx, out),
        axis=axis,
        rounding=ROUNDING,
        compute_dtype=COMPUTE,
        out_dtype=out.dtype,
    )


def _bounds(name: str) -> tuple[float, float] | None:
    return {
        "RELU": (0.0, np.inf),
        "RELU6": (0.0, 6.0),
        "RELU_N1_TO_1": (-1.0, 1.0),
    }.get(name)


def activation_bounds(name: str, out: TensorInfo) -> tuple[int, int]:
    """The quantized clip range of the fused activation ``name`` on tensor ``out``."""
    info = np.iinfo(np.dtype(out.dtype))
    lo, hi = int(info.min), int(info.max)
    bounds = _bounds(name)
    if bounds is None or out.quant is None:
        return lo, hi
    scale = float(np.asarray(out.quant.scale).reshape(-1)[0])
    zp = int(np.asarray(out.quant.zero_point).reshape(-1)[0])
    flo, fhi = bounds
    lo = max(lo, zp + round(flo / scale))
    if np.isfinite(fhi):
        hi = min(hi, zp + round(fhi / scale))
    return lo, hi


def dequantize(ctx: OpContext, x: Expr, t: TensorInfo) -> Expr:
    """``x`` (quantized as ``t``) as float32."""
    q = _quant(ctx, t)
    return op.qnn.dequantize(x, scale_const(ctx, t), zero_point_const(ctx, t), axis=q.axis)


def quantize(ctx: OpContext, x: Expr, t: TensorInfo) -> Expr:
    """The float ``x`` quantized as ``t``."""
    q = _quant(ctx, t)
    return op.qnn.quantize(
        x, scale_const(ctx, t), zero_point_const(ctx, t), axis=q.axis, out_dtype=t.dtype
    )


def dequantize_array(t: TensorInfo) -> np.ndarray:
    """The float32 values of the quantized constant ``t`` (per-axis along its axis)."""
    if t.data is None or t.quant is None:
        raise FrontendError(f"TFLite tensor '{t.name}' is not a quantized constant")
    q = t.quant
    scale = np.asarray(q.scale, np.float32)
    zp = np.asarray(q.zero_point, np.float32)
    if scale.size > 1:
        shape = [1] * t.data.ndim
        shape[q.axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return ((t.data.astype(np.float32) - zp) * scale).astype(np.float32)


def float_weight(ctx: OpContext, index: int, data_index: int = 0) -> np.ndarray:
    """The constant weight ``index`` of an operator; dequantized when the weight is
    quantized but the data is float (a dynamic-range / hybrid model, whose int8 weights
    TFLite's hybrid kernels apply to float activations)."""
    w = ctx.value(index, "weight")
    t = ctx.tensor(index)
    if is_quantized(t) and not is_quantized(ctx.tensor(data_index)):
        return dequantize_array(t)
    return w


def through_float(ctx: OpContext, fn: Callable[[Expr], Expr], index: int = 0) -> Expr:
    """``fn`` of input ``index``: directly for float tensors, else dequantized, computed
    in float32 and quantized to the output's parameters."""
    x = ctx.expr(index)
    t_in, t_out = ctx.tensor(index), ctx.outputs[0]
    if not is_quantized(t_in):
        return fn(x)
    return quantize(ctx, fn(dequantize(ctx, x, t_in)), t_out)
