"""TFLite converters: pooling and reductions (``MAX_POOL_2D``, ``AVERAGE_POOL_2D``,
``L2_POOL_2D``, ``MEAN``, ``SUM``, ``REDUCE_MAX``, ``REDUCE_MIN``, ``REDUCE_PROD``,
``ARG_MAX``, ``ARG_MIN``), NHWC.

A quantized average pool averages in int32 and rounds halves away from zero, as
TFLite's integer kernel does; a quantized mean or sum computes in float32 between a
dequantize and a quantize.
"""

from __future__ import annotations

import numpy as np

from relaykit import op
from relaykit.frontend.tflite.quantized import is_quantized, through_float
from relaykit.frontend.tflite.registry import OpContext, converter
from relaykit.frontend.tflite.schema import TENSOR_DTYPES
from relaykit.ir.expr import Constant, Expr

from .common import fused_activation, padding_of

__all__: list[str] = []


def _pool_attrs(ctx: OpContext) -> tuple[dict, int]:
    opts = ctx.options("Pool2DOptions")
    kernel = (int(opts.FilterHeight()), int(opts.FilterWidth()))
    strides = (int(opts.StrideH()), int(opts.StrideW()))
    h, w = ctx.tensor(0).shape[1:3]
    pad = padding_of(opts.Padding(), (h, w), kernel, strides, (1, 1))
    attrs = {"pool_size": kernel, "strides": strides, "padding": pad, "layout": "NHWC"}
    return attrs, int(opts.FusedActivationFunction())


@converter("MAX_POOL_2D")
def _max_pool(ctx: OpContext) -> Expr:
    attrs, code = _pool_attrs(ctx)
    return fused_activation(ctx, op.nn.max_pool2d(ctx.expr(0), **attrs), code)


def _round_away(x: Expr) -> Expr:
    half = Constant(np.float32(0.5))
    return op.multiply(op.sign(x), op.floor(op.add(op.abs(x), half)))


@converter("AVERAGE_POOL_2D")
def _avg_pool(ctx: OpContext) -> Expr:
    attrs, code = _pool_attrs(ctx)
    x, t = ctx.expr(0), ctx.tensor(0)
    if not is_quantized(t):
        y = op.nn.avg_pool2d(x, count_include_pad=False, **attrs)
        return fused_activation(ctx, y, code)
    mean = op.nn.avg_pool2d(op.cast(x, "float32"), count_include_pad=False, **attrs)
    info = np.iinfo(np.dtype(t.dtype))
    y = op.cast(op.clip(_round_away(mean), float(info.min), float(info.max)), t.dtype)
    return fused_activation(ctx, y, code)


@converter("L2_POOL_2D")
def _l2_pool(ctx: OpContext) -> Expr:
    attrs, code = _pool_attrs(ctx)
    x = ctx.expr(0)
    y = op.sqrt(op.nn.avg_pool2d(op.multiply(x, x), count_include_pad=False, **attrs))
    return fused_activation(ctx, y, code)


_REDUCERS = {
    "MEAN": op.mean,
    "SUM": op.sum,
    "REDUCE_MAX": op.max,
    "REDUCE_MIN": op.min,
    "REDUCE_PROD": op.prod,
    "REDUCE_ANY": op.any,
    "REDUCE_ALL": op.all,
}


@converter(*_REDUCERS)
def _reduce(ctx: OpContext) -> Expr:
    axes = [int(a) for a in np.asarray(ctx.value(1, "axes")).reshape(-1)]
    keep = bool(ctx.options("ReducerOptions").KeepDims())
    fn = _REDUCERS[ctx.name]
    t = ctx.tensor(0)
    if is_quantized(t) and ctx.name in ("REDUCE_MAX", "REDUCE_MIN"):
        return fn(ctx.expr(0), axis=axes, keepdims=keep)
    return through_float(ctx, lambda v: fn(v, axis=axes, keepdims=keep))


@converter("ARG_MAX", "ARG_MIN")
def _arg(ctx: OpContext) -> Expr:
    axis = int(np.asarray(ctx.value(1, "axis")).reshape(-1)[0])
    fn = op.argmax if ctx.name == "ARG_MAX" else op.argmin
    cls = "ArgMaxOptions" if ctx.name == "ARG_MAX" else "ArgMinOptions"
    out_type = TENSOR_DTYPES.get(int(ctx.options(cls).OutputType()), "int64")
    return op.cast(fn(ctx.expr(0), axis=[axis]), out_type)
