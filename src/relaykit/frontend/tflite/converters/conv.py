"""TFLite converters: convolutions and fully connected layers (``CONV_2D``,
``DEPTHWISE_CONV_2D``, ``TRANSPOSE_CONV``, ``FULLY_CONNECTED``, ``BATCH_MATMUL``).

Tensors stay NHWC, as TFLite has them; weights become HWIO (a depthwise one HWIO with
one input channel per group). Quantized operators become ``qnn.conv2d`` /
``qnn.dense`` accumulating in int32, the int32 bias, ``qnn.requantize`` to the output's
parameters (per output channel for per-axis weights) and the fused activation as a clip.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.tflite.quantized import (
    float_weight,
    is_quantized,
    requantize,
    scale_const,
    zero_point_const,
)
from relaykit.frontend.tflite.registry import OpContext, converter
from relaykit.ir.expr import Constant, Expr

from .common import fused_activation, padding_of

__all__: list[str] = []


def _weight_scale(ctx: OpContext, index: int) -> np.ndarray:
    q = ctx.tensor(index).quant
    if q is None:
        raise ctx.fail(f"its weight '{ctx.tensor(index).name}' is not quantized")
    return np.asarray(q.scale, np.float32)


def _in_scale(ctx: OpContext, data: int = 0) -> np.ndarray:
    """The scale of the int32 accumulator: data scale times (per-channel) weight scale."""
    s = scale_const(ctx, ctx.tensor(data)).data.numpy()
    return np.asarray(s, np.float32).reshape(()) * _weight_scale(ctx, 1)


def _bias(ctx: OpContext, acc: Expr, axis: int, quantized: bool) -> Expr:
    if not ctx.has_input(2):
        return acc
    b = ctx.tensor(2)
    bias = ctx.expr(2)
    if quantized and b.dtype != "int32":
        if b.dtype == "int64":
            bias = Constant(ctx.value(2).astype(np.int32))
        else:
            raise ctx.fail(f"its quantized bias must be int32, got {b.dtype}")
    return op.nn.bias_add(acc, bias, axis=axis)


def _quantized_conv_out(ctx: OpContext, acc: Expr, code: int) -> Expr:
    acc = _bias(ctx, acc, 3, True)
    y = requantize(ctx, acc, _in_scale(ctx), ctx.outputs[0], 3)
    return fused_activation(ctx, y, code)


def _conv_attrs(ctx: OpContext, opts: Any, kernel: tuple[int, int]) -> dict[str, Any]:
    strides = (int(opts.StrideH()), int(opts.StrideW()))
    dil = (int(opts.DilationHFactor()), int(opts.DilationWFactor()))
    h, w = ctx.tensor(0).shape[1:3]
    pad = padding_of(opts.Padding(), (h, w), kernel, strides, dil)
    return {"strides": strides, "dilation": dil, "padding": pad, "kernel_size": kernel}


def _conv(
    ctx: OpContext, weight: np.ndarray, groups: int, code: int, attrs: dict[str, Any]
) -> Expr:
    """NHWC ``x`` by the HWIO ``weight``, float or quantized."""
    x = ctx.expr(0)
    channels = int(weight.shape[3])
    w = Constant(np.ascontiguousarray(weight))
    common: dict[str, Any] = dict(
        channels=channels, groups=groups, data_layout="NHWC", kernel_layout="HWIO", **attrs
    )
    if is_quantized(ctx.tensor(0)):
        wt = ctx.tensor(1)
        acc = op.qnn.conv2d(
            x,
            w,
            zero_point_const(ctx, ctx.tensor(0)),
            zero_point_const(ctx, wt),
            scale_const(ctx, ctx.tensor(0)),
            scale_const(ctx, wt),
            **common,
        )
        return _quantized_conv_out(ctx, acc, code)
    y = op.nn.conv2d(x, w, **common)
    return fused_activation(ctx, _bias(ctx, y, 3, False), code)


@converter("CONV_2D")
def _conv2d(ctx: OpContext) -> Expr:
    opts = ctx.options("Conv2DOptions")
    ohwi = float_weight(ctx, 1)
    kernel = (int(ohwi.shape[1]), int(ohwi.shape[2]))
    in_c = ctx.tensor(0).shape[3]
    groups = max(1, in_c // int(ohwi.shape[3]))
    hwio = ohwi.transpose(1, 2, 3, 0)
    return _conv(ctx, hwio, groups, opts.FusedActivationFunction(), _conv_attrs(ctx, opts, kernel))


@converter("DEPTHWISE_CONV_2D")
def _depthwise(ctx: OpContext) -> Expr:
    opts = ctx.options("DepthwiseConv2DOptions")
    w = float_weight(ctx, 1)  # [1, KH, KW, C * multiplier]
    kernel = (int(w.shape[1]), int(w.shape[2]))
    in_c = ctx.tensor(0).shape[3]
    hwio = w.reshape(kernel[0], kernel[1], 1, w.shape[3])
    code = opts.FusedActivationFunction()
    return _conv(ctx, hwio, in_c, code, _conv_attrs(ctx, opts, kernel))


@converter("TRANSPOSE_CONV")
def _transpose_conv(ctx: OpContext) -> Expr:
    """Inputs: output shape, weight ``[O, KH, KW, I]``, data, optional bias."""
    opts = ctx.options("TransposeConvOptions")
    out_shape = [int(v) for v in ctx.value(0, "output shape")]
    ohwi = float_weight(ctx, 1, data_index=2)
    o, kh, kw, _i = (int(d) for d in ohwi.shape)
    x = ctx.expr(2)
    xt = ctx.tensor(2)
    h, w = xt.shape[1:3]
    strides = (int(opts.StrideH()), int(opts.StrideW()))
    oh, ow = out_shape[1], out_shape[2]
    full = ((h - 1) * strides[0] + kh, (w - 1) * strides[1] + kw)
    total = (max(full[0] - oh, 0), max(full[1] - ow, 0))
    pad = (total[0] // 2, total[1] // 2, total[0] - total[0] // 2, total[1] - total[1] // 2)
    extra = (oh - (full[0] - total[0]), ow - (full[1] - total[1]))
    # relay's NHWC transposed convolution takes an IOHW kernel
    iohw = Constant(np.ascontiguousarray(ohwi.transpose(3, 0, 1, 2)))
    attrs: dict[str, Any] = dict(
        channels=o,
        kernel_size=(kh, kw),
        strides=strides,
        padding=pad,
        output_padding=extra,
        data_layout="NHWC",
        kernel_layout="IOHW",
    )
    code = opts.FusedActivationFunction() if hasattr(opts, "FusedActivationFunction") else 0
    bias_index = 3
    if is_quantized(xt):
        wt = ctx.tensor(1)
        acc = op.qnn.conv2d_transpose(
            x,
            iohw,
            zero_point_const(ctx, xt),
            zero_point_const(ctx, wt),
            scale_const(ctx, xt),
            scale_const(ctx, wt),
            **attrs,
        )
        if ctx.has_input(bias_index):
            acc = op.nn.bias_add(acc, ctx.expr(bias_index), axis=3)
        y = requantize(ctx, acc, _in_scale(ctx, 2), ctx.outputs[0], 3)
        return fused_activation(ctx, y, code)
    y = op.nn.conv2d_transpose(x, iohw, **attrs)
    if ctx.has_input(bias_index):
        y = op.nn.bias_add(y, ctx.expr(bias_index), axis=3)
    return fused_activation(ctx, y, code)


@converter("FULLY_CONNECTED")
def _fully_connected(ctx: OpContext) -> Expr:
    opts = ctx.options("FullyConnectedOptions")
    x = ctx.expr(0)
    shape = ctx.shape(x)
    w = ctx.expr(1)  # [units, K]
    if ctx.is_const(1) and not is_quantized(ctx.tensor(0)):
        w = Constant(float_weight(ctx, 1))
    units, k = (int(d) for d in ctx.tensor(1).shape)
    rows = int(np.prod(shape)) // k
    x2 = x if (len(shape) == 2 and shape[1] == k) else op.reshape(x, (rows, k))
    code = opts.FusedActivationFunction()
    y: Expr
    if is_quantized(ctx.tensor(0)):
        wt = ctx.tensor(1)
        acc: Expr = op.qnn.dense(
            x2,
            w,
            zero_point_const(ctx, ctx.tensor(0)),
            zero_point_const(ctx, wt),
            scale_const(ctx, ctx.tensor(0)),
            scale_const(ctx, wt),
            units=units,
        )
        acc = _bias(ctx, acc, 1, True)
        y = requantize(ctx, acc, _in_scale(ctx), ctx.outputs[0], 1)
    else:
        y = _bias(ctx, op.nn.dense(x2, w, units=units), 1, False)
    y = fused_activation(ctx, y, code)
    keep = bool(opts.KeepNumDims()) if hasattr(opts, "KeepNumDims") else False
    if keep and len(shape) != 2:
        y = op.reshape(y, (*shape[:-1], units))
    return y


@converter("BATCH_MATMUL")
def _batch_matmul(ctx: OpContext) -> Expr:
    opts = ctx.options("BatchMatMulOptions")
    a, b = ctx.expr(0), ctx.expr(1)
    if ctx.is_const(1) and not is_quantized(ctx.tensor(0)):
        b = Constant(float_weight(ctx, 1))
    if bool(opts.AdjX()):
        a = op.transpose(a, (*range(len(ctx.shape(a)) - 2), -1, -2))
    if bool(opts.AdjY()):
        b = op.transpose(b, (*range(len(ctx.shape(b)) - 2), -1, -2))
    sa, sb = ctx.shape(a), ctx.shape(b)
    batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    nb = int(np.prod(batch)) if batch else 1
    a3 = op.reshape(op.broadcast_to(a, (*batch, *sa[-2:])), (nb, *sa[-2:]))
    b3 = op.reshape(op.broadcast_to(b, (*batch, *sb[-2:])), (nb, *sb[-2:]))
    if is_quantized(ctx.tensor(0)):
        ta, tb = ctx.tensor(0), ctx.tensor(1)
        acc = op.qnn.batch_matmul(
            a3,
            b3,
            zero_point_const(ctx, ta),
            zero_point_const(ctx, tb),
            scale_const(ctx, ta),
            scale_const(ctx, tb),
            transpose_b=False,
        )
        y = requantize(ctx, acc, _in_scale(ctx), ctx.outputs[0], -1)
    else:
        y = op.nn.batch_matmul(a3, b3, transpose_b=False)
    return op.reshape(y, (*batch, sa[-2], sb[-1]))
