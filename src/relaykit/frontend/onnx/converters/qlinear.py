"""ONNX converters: quantized convolution and matrix product (``QLinearConv``,
``QLinearMatMul``, ``ConvInteger``, ``MatMulInteger``).

With constant quantization parameters they become QNN operators, as TVM's frontend
imports them: ``qnn.conv2d`` / ``qnn.dense`` / ``qnn.batch_matmul`` accumulating in
int32, then (for the ``QLinear`` forms) the int32 bias and ``qnn.requantize`` to the
output's scale and zero point. The data's zero point of ``ConvInteger`` /
``MatMulInteger`` may be computed at run time (``DynamicQuantizeLinear`` makes it). Other
parameters computed at run time (ONNX allows them), 1-D or 3-D convolutions, per-row
zero points and a batched ``B`` with per-column parameters are computed exactly in
integer arithmetic instead.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr

from .common import resolve_pads, round_half_to_even
from .conv import _conv
from .nn import matmul
from .quant import _along, _saturate
from .quant_params import QParams, const_qparams, is_const

__all__: list[str] = []

#: how the requantization of an int32 accumulator is computed: as ONNX specifies it and
#: onnxruntime's kernels do it, ``round(float32(acc) * scale) + zero_point`` with the
#: float32 ``x_scale * w_scale / y_scale``, halves to even (TVM's Q31 fixed point rounds
#: one step apart on about one value in ten thousand, and the steps compound over layers)
ROUNDING = "TONEAREST_EVEN"
COMPUTE = "float32"


# -- QNN forms --------------------------------------------------------------------------------


def _requantize(acc: Expr, in_scale: np.ndarray, out: QParams, axis: int, dtype: str) -> Expr:
    scale = np.asarray(in_scale, np.float32)
    return op.qnn.requantize(
        acc,
        Constant(scale.reshape(-1) if scale.size > 1 else scale.reshape(())),
        Constant(np.array(0, np.int32)),
        out.scale,
        out.zero_point,
        axis=axis,
        rounding=ROUNDING,
        compute_dtype=COMPUTE,
        out_dtype=dtype,
    )


def _qnn_conv(
    ctx: NodeContext, x: Expr, w: Expr, xq: QParams, wq: QParams, attrs: dict[str, Any]
) -> Expr:
    """``qnn.conv2d`` of a 2-D convolution with ONNX's attributes, in int32."""
    spatial = ctx.shape(x)[2:]
    kernel = tuple(attrs.get("kernel_shape") or ctx.shape(w)[2:])
    strides = tuple(attrs.get("strides") or (1, 1))
    dilations = tuple(attrs.get("dilations") or (1, 1))
    pads = resolve_pads(
        attrs.get("auto_pad", "NOTSET"),
        spatial,
        kernel,
        strides,
        dilations,
        attrs.get("pads") or (),
    )
    return op.qnn.conv2d(
        x,
        w,
        xq.zero_point,
        wq.zero_point,
        xq.scale,
        wq.scale,
        kernel_size=kernel,
        channels=ctx.shape(w)[0],
        strides=strides,
        padding=(pads[0], pads[1], pads[2], pads[3]),
        dilation=dilations,
        groups=int(attrs.get("group", 1)),
    )


def _qnn_matmul(ctx: NodeContext, a: Expr, b: Expr, aq: QParams, bq: QParams) -> Expr:
    """The int32 product of ``a`` (N-D) and ``b``: ``qnn.dense`` for a 2-D ``b`` (its
    columns the output channels), else ``qnn.batch_matmul`` over the broadcast batch."""
    ashape, bshape = ctx.shape(a), ctx.shape(b)
    if len(bshape) == 2:
        k, n = bshape
        rows = math.prod(ashape[:-1])
        if isinstance(b, Constant):
            wt: Expr = Constant(np.ascontiguousarray(b.data.numpy().T))
        else:
            wt = op.transpose(b, (1, 0))
        a2 = a if len(ashape) == 2 else op.reshape(a, (rows, k))
        acc = op.qnn.dense(a2, wt, aq.zero_point, bq.zero_point, aq.scale, bq.scale, units=n)
        return acc if len(ashape) == 2 else op.reshape(acc, (*ashape[:-1], n))
    batch = tuple(np.broadcast_shapes(tuple(ashape[:-2]), tuple(bshape[:-2])))
    m, k = ashape[-2:]
    n = bshape[-1]
    nb = math.prod(batch)
    a3 = op.reshape(op.broadcast_to(a, (*batch, m, k)) if ashape[:-2] != batch else a, (nb, m, k))
    b3 = op.reshape(op.broadcast_to(b, (*batch, k, n)) if bshape[:-2] != batch else b, (nb, k, n))
    acc = op.qnn.batch_matmul(
        a3, b3, aq.zero_point, bq.zero_point, aq.scale, bq.scale, transpose_b=False
    )
    return op.reshape(acc, (*batch, m, n))


# -- exact integer arithmetic (run-time parameters) ---------------------------------------------


def _centered(ctx: NodeContext, x: Expr, zp: Expr | None, row_axis: int | None = None) -> Expr:
    """``x - zero_point`` in int32 (a 1-D zero point applies along ``row_axis``)."""
    xi = op.cast(x, "int32")
    if zp is None:
        return xi
    z: Expr = op.cast(zp, "int32")
    if row_axis is not None and ctx.ndim(zp) == 1 and ctx.ndim(x) >= 2:
        z = _along(ctx, z, ctx.ndim(x), row_axis)
    return op.subtract(xi, z)


def _float_requantize(ctx: NodeContext, acc: Expr, scale: Expr, y_scale: Expr, y_zp: Expr | None):
    dt = ctx.dtype(y_scale)
    real = op.multiply(op.cast(acc, dt), scale)
    y = round_half_to_even(ctx, op.divide(real, y_scale))
    out_dt = ctx.dtype(y_zp) if y_zp is not None else "uint8"
    if y_zp is not None:
        y = op.add(y, op.cast(y_zp, dt))
    return _saturate(ctx, y, out_dt)


def _int_conv(ctx: NodeContext, x: Expr, w: Expr, x_zp: Expr | None, w_zp, attrs: dict) -> Expr:
    xi = _centered(ctx, x, x_zp)
    wi = op.cast(w, "int32")
    if w_zp is not None:
        wz: Expr = op.cast(w_zp, "int32")
        if ctx.ndim(w_zp) == 1:
            wz = _along(ctx, wz, ctx.ndim(w), 0)
        wi = op.subtract(wi, wz)
    return _conv(ctx, xi, wi, None, **attrs)


def _unit(ctx: NodeContext, zp: Expr | None, x: Expr, what: str, channels: int | None) -> QParams:
    """Parameters of an ``*Integer`` operand: scale 1, its zero point checked."""
    one = Constant(np.array(1.0, np.float32))
    return const_qparams(ctx, one, zp, ctx.dtype(x), what, channels)


def _data_unit(ctx: NodeContext, zp: Expr | None, x: Expr, what: str) -> QParams:
    """Parameters of the data operand of an ``*Integer`` operator: checked constants, or
    its one-value zero point computed at run time (``DynamicQuantizeLinear`` makes one) as
    an int32 scalar expression."""
    if zp is None or isinstance(zp, Constant):
        return _unit(ctx, zp, x, what, None)
    if ctx.dtype(zp) != ctx.dtype(x):
        raise ctx.fail(f"the {what} zero point is {ctx.dtype(zp)} but {what} is {ctx.dtype(x)}")
    runtime = op.cast(op.reshape(zp, ()), "int32")
    return QParams(np.array(1.0, np.float32), np.array(0, np.int64), runtime)


def _scalar_zp(ctx: NodeContext, zp: Expr | None) -> bool:
    return zp is None or math.prod(ctx.shape(zp)) == 1


# -- converters -------------------------------------------------------------------------------


@converter("ConvInteger", 10)
def _conv_integer(
    ctx: NodeContext,
    x: Expr,
    w: Expr,
    x_zp: Expr | None = None,
    w_zp: Expr | None = None,
    **attrs: Any,
) -> Expr:
    if ctx.ndim(x) == 4 and is_const(w_zp) and _scalar_zp(ctx, x_zp):
        xq = _data_unit(ctx, x_zp, x, "x")
        wq = _unit(ctx, w_zp, w, "w", ctx.shape(w)[0])
        return _qnn_conv(ctx, x, w, xq, wq, attrs)
    return _int_conv(ctx, x, w, x_zp, w_zp, attrs)


@converter("MatMulInteger", 10)
def _matmul_integer(
    ctx: NodeContext, a: Expr, b: Expr, a_zp: Expr | None = None, b_zp: Expr | None = None
) -> Expr:
    if ctx.ndim(a) >= 2 and ctx.ndim(b) >= 2 and is_const(b_zp) and _scalar_zp(ctx, a_zp):
        b_cols = ctx.shape(b)[-1] if ctx.ndim(b) == 2 else None
        aq = _data_unit(ctx, a_zp, a, "a")
        bq = _unit(ctx, b_zp, b, "b", b_cols)
        return _qnn_matmul(ctx, a, b, aq, bq)
    return matmul(ctx, _centered(ctx, a, a_zp, ctx.ndim(a) - 2), _centered(ctx, b, b_zp))


@converter("QLinearMatMul", 10)
def _qlinear_matmul(
    ctx: NodeContext,
    a: Expr,
    a_scale: Expr,
    a_zp: Expr,
    b: Expr,
    b_scale: Expr,
    b_zp: Expr,
    y_scale: Expr,
    y_zp: Expr,
) -> Expr:
    params = (a_scale, a_zp, b_scale, b_zp, y_scale, y_zp)
    floats = all(ctx.dtype(s) == "float32" for s in (a_scale, b_scale, y_scale))
    # a batched B has one scale (qnn.batch_matmul); per-column ones take the float path
    per_tensor_b = ctx.ndim(b) == 2 or (_scalar_zp(ctx, b_scale) and _scalar_zp(ctx, b_zp))
    if ctx.ndim(a) >= 2 and ctx.ndim(b) >= 2 and is_const(*params) and floats and per_tensor_b:
        b_cols = ctx.shape(b)[-1] if ctx.ndim(b) == 2 else None
        aq = const_qparams(ctx, a_scale, a_zp, ctx.dtype(a), "a")
        bq = const_qparams(ctx, b_scale, b_zp, ctx.dtype(b), "b", b_cols)
        yq = const_qparams(ctx, y_scale, y_zp, ctx.dtype(y_zp), "y")
        acc = _qnn_matmul(ctx, a, b, aq, bq)
        in_scale = aq.scale_values.astype(np.float32) * bq.scale_values.astype(np.float32)
        return _requantize(acc, in_scale, yq, len(ctx.shape(a)) - 1, ctx.dtype(y_zp))
    acc = matmul(ctx, _centered(ctx, a, a_zp, ctx.ndim(a) - 2), _centered(ctx, b, b_zp))
    sa = a_scale
    if ctx.ndim(a_scale) == 1 and ctx.ndim(a) >= 2:
        sa = _along(ctx, a_scale, ctx.ndim(a), ctx.ndim(a) - 2)
    return _float_requantize(ctx, acc, op.multiply(sa, b_scale), y_scale, y_zp)


@converter("QLinearConv", 10)
def _qlinear_conv(
    ctx: NodeContext,
    x: Expr,
    x_scale: Expr,
    x_zp: Expr,
    w: Expr,
    w_scale: Expr,
    w_zp: Expr,
    y_scale: Expr,
    y_zp: Expr,
    bias: Expr | None = None,
    **attrs: Any,
) -> Expr:
    params = (x_scale, x_zp, w_scale, w_zp, y_scale, y_zp)
    floats = all(ctx.dtype(s) == "float32" for s in (x_scale, w_scale, y_scale))
    if ctx.ndim(x) == 4 and is_const(*params) and floats:
        xq = const_qparams(ctx, x_scale, x_zp, ctx.dtype(x), "x")
        wq = const_qparams(ctx, w_scale, w_zp, ctx.dtype(w), "w", ctx.shape(w)[0])
        yq = const_qparams(ctx, y_scale, y_zp, ctx.dtype(y_zp), "y")
        acc = _qnn_conv(ctx, x, w, xq, wq, attrs)
        if bias is not None:
            if ctx.dtype(bias) != "int32":
                raise ctx.fail(f"its bias must be int32, got {ctx.dtype(bias)}")
            acc = op.nn.bias_add(acc, bias, axis=1)
        in_scale = xq.scale_values.astype(np.float32) * wq.scale_values.astype(np.float32)
        return _requantize(acc, in_scale, yq, 1, ctx.dtype(y_zp))
    acc = _int_conv(ctx, x, w, x_zp, w_zp, attrs)
    if bias is not None:
        acc = op.nn.bias_add(acc, op.cast(bias, "int32"), axis=1)
    ws = w_scale
    if ctx.ndim(w_scale) == 1:
        ws = _along(ctx, w_scale, ctx.ndim(x), 1)
    return _float_requantize(ctx, acc, op.multiply(x_scale, ws), y_scale, y_zp)
