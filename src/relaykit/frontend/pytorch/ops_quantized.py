"""Converters of torch's quantized ops (``quantized::*`` and ``aten::quantize_per_*``) to
Relay's QNN dialect, as torch.ao eager-mode and FX-quantized models trace them.

Convolutions and linear layers become ``qnn.conv2d`` / ``qnn.dense`` in int32, the
bias quantized to int32 at ``input_scale * weight_scale`` (``nn.bias_add``), then
``qnn.requantize`` (rounding to nearest) to the op's output scale and zero point; a
fused ReLU is a ``clip`` from the output zero point. Element-wise ops whose torch kernel
computes in float (hardswish, leaky_relu, sigmoid, relu6, batch_norm) become
dequantize -> float op -> quantize, which gives torch's integers exactly.

>>> from relaykit.frontend.pytorch.registry import CONVERTERS
>>> "quantized::conv2d" in CONVERTERS and "quantize_per_tensor" in CONVERTERS
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Constant, Expr, Var, const
from relaykit.op import nn, qnn
from relaykit.transform.fold_constant import fold_constant

from .ops_nn import layer_norm, matmul
from .quantized import (
    EVEN,
    PackedParams,
    QTensor,
    concat_q,
    dequantize,
    qrange,
    quantize,
    torch_qdtype,
)
from .registry import OpContext, converter

__all__ = ["constant_arg"]


def _q(ctx: OpContext, value: Any, what: str = "input") -> QTensor:
    if not isinstance(value, QTensor):
        raise ctx.fail(f"the {what} must be a quantized tensor (quantize_per_tensor it first)")
    return value


def constant_arg(ctx: OpContext, value: Any, what: str) -> np.ndarray:
    """A constant argument (a number, a constant or a parameter of the model) as NumPy."""
    if isinstance(value, Constant):
        return value.data.numpy()
    if isinstance(value, Var) and value in ctx.constants:
        return np.asarray(ctx.constants[value])
    if isinstance(value, Expr):
        folded = fold_constant(value)  # torch.zeros(n) and the like
        if isinstance(folded, Constant):
            return folded.data.numpy()
        raise ctx.fail(
            f"the {what} must be a constant (relaykit quantizes with constant parameters), "
            "got a value computed in the graph"
        )
    if hasattr(value, "detach"):
        return np.asarray(value.detach().numpy())
    return np.asarray(value)


def _qdtype(ctx: OpContext, value: Any) -> str:
    dtype = torch_qdtype(value)
    if dtype is None:
        raise ctx.fail(f"unsupported quantized dtype {value!r} (quint8, qint8, qint32 are)")
    return dtype


# -- quantize / dequantize --------------------------------------------------------------------
@converter("quantize_per_tensor")
def _quantize_per_tensor(ctx: OpContext, args: list[Any]) -> Any:
    x, scale, zp, dtype = args[:4]
    dt = _qdtype(ctx, dtype)
    s = constant_arg(ctx, scale, "scale").astype("float32").reshape(())
    z = constant_arg(ctx, zp, "zero point").astype("int32").reshape(())
    if isinstance(x, (list, tuple)):
        return [quantize(ctx.expr(v), s, z, dt) for v in x]
    return quantize(ctx.expr(x), s, z, dt)


@converter("quantize_per_channel")
def _quantize_per_channel(ctx: OpContext, args: list[Any]) -> QTensor:
    x, scales, zps, axis, dtype = args[:5]
    x = ctx.expr(x)
    s = constant_arg(ctx, scales, "scales").astype("float32").reshape(-1)
    z = constant_arg(ctx, zps, "zero points").astype("int32").reshape(-1)
    return quantize(x, s, z, _qdtype(ctx, dtype), ctx.axis(x, int(axis)))


@converter("dequantize")
def _dequantize(ctx: OpContext, args: list[Any]) -> Any:
    x = args[0]
    if isinstance(x, (list, tuple)):
        return [dequantize(_q(ctx, v)) for v in x]
    if isinstance(x, QTensor):
        return dequantize(x)
    return ctx.expr(x)  # dequantize of a float tensor is the tensor


# -- packed weights ---------------------------------------------------------------------------
def _packed(ctx: OpContext, value: Any) -> PackedParams:
    if not isinstance(value, PackedParams):
        raise ctx.fail("expected packed quantized weights (a *PackedParamsBase object)")
    return value


def _prepack_weight(ctx: OpContext, w: Any, bias: Any) -> dict[str, Any]:
    wq = _q(ctx, w, "weight")
    b = None if bias is None else ctx.expr(bias)
    return {
        "weight": None,
        "weight_expr": wq.expr,
        "w_scale": wq.scale,
        "w_zero_point": wq.zero_point,
        "w_axis": 0 if not wq.per_channel else wq.axis,
        "bias": None,
        "bias_expr": b,
        "make_param": _no_param,
        "weight_shape": tuple(ctx.shape(wq.expr)),
    }


def _no_param(name: str, value: np.ndarray) -> Expr:
    return const(value)


@converter("quantized::linear_prepack")
def _linear_prepack(ctx: OpContext, args: list[Any]) -> PackedParams:
    return PackedParams(kind="linear", **_prepack_weight(ctx, args[0], args[1]))


@converter("quantized::conv2d_prepack", "quantized::conv_transpose2d_prepack")
def _conv2d_prepack(ctx: OpContext, args: list[Any]) -> PackedParams:
    transposed = "transpose" in ctx.op_name
    w, bias, stride, padding = args[:4]
    if transposed:
        output_padding, dilation, groups = args[4], args[5], args[6]
    else:
        output_padding, dilation, groups = [0, 0], args[4], args[5]
    return PackedParams(
        kind="conv",
        stride=tuple(int(v) for v in stride),
        padding=tuple(int(v) for v in padding),
        dilation=tuple(int(v) for v in dilation),
        output_padding=tuple(int(v) for v in output_padding),
        groups=int(groups),
        transposed=transposed,
        **_prepack_weight(ctx, w, bias),
    )


# -- convolution and linear -------------------------------------------------------------------
def _requantize_out(
    acc: Expr, in_scale: np.ndarray, x: QTensor, scale: Any, zp: Any, axis: int, relu: bool
) -> QTensor:
    out_scale = np.asarray(scale, "float32").reshape(())
    out_zp = np.asarray(zp, "int32").reshape(())
    zeros = np.zeros(np.shape(in_scale), "int32")
    y = qnn.requantize(
        acc,
        const(np.asarray(in_scale, "float32"), "float32"),
        const(zeros, "int32"),
        const(out_scale, "float32"),
        const(out_zp, "int32"),
        axis=axis,
        rounding="TONEAREST",
        out_dtype=x.dtype,
    )
    if relu:
        _, hi = qrange(x.dtype)
        y = op.clip(y, int(out_zp), hi)
    return QTensor(y, out_scale, out_zp, x.dtype)


def _kernel_zp(p: PackedParams) -> Constant:
    zp = np.asarray(p.w_zero_point, "int32")
    if zp.ndim and np.all(zp == zp.reshape(-1)[0]):
        zp = zp.reshape(-1)[0]
    return const(np.asarray(zp, "int32"), "int32")


def _conv(ctx: OpContext, args: list[Any]) -> QTensor:
    x = _q(ctx, args[0])
    p = _packed(ctx, args[1])
    one_d = "conv1d" in ctx.op_name  # torch packs a 1-d kernel as a 2-d one of height 1
    if one_d:
        x = x.with_expr(op.expand_dims(x.expr, 2))
    if p.kind != "conv":
        raise ctx.fail("a convolution needs convolution weights, got linear ones")
    scale, zp = args[2], args[3]
    w = p.int_weight()
    wshape = ctx.shape(w)
    in_scale = (np.float64(x.scale) * np.asarray(p.w_scale, "float64")).astype("float32")
    common: dict[str, Any] = dict(
        input_zero_point=x.zp_const(),
        kernel_zero_point=_kernel_zp(p),
        input_scale=x.scale_const(),
        kernel_scale=const(np.asarray(p.w_scale, "float32"), "float32"),
        kernel_size=tuple(wshape[2:]),
        strides=p.stride,
        padding=p.padding,
        dilation=p.dilation,
        groups=p.groups,
        out_dtype="int32",
    )
    if p.transposed:
        if np.ndim(p.w_scale) and p.w_axis != 1 and np.asarray(p.w_scale).size > 1:
            raise ctx.fail("per-channel weights of a transposed convolution are not supported")
        acc = qnn.conv2d_transpose(
            x.expr, w, channels=wshape[1] * p.groups, output_padding=p.output_padding, **common
        )
    else:
        acc = qnn.conv2d(x.expr, w, channels=wshape[0], **common)
    bias = p.int_bias(x.scale, 0)
    if bias is not None:
        acc = nn.bias_add(acc, bias, axis=1)
    relu = ctx.op_name.endswith("_relu")
    out = _requantize_out(acc, in_scale, x, scale, zp, 1, relu)
    return out.with_expr(op.squeeze(out.expr, [2])) if one_d else out


converter("quantized::conv2d", "quantized::conv2d_relu")(_conv)
converter("quantized::conv1d", "quantized::conv1d_relu")(_conv)
converter("quantized::conv_transpose2d")(_conv)


def _linear(ctx: OpContext, args: list[Any]) -> QTensor:
    x = _q(ctx, args[0])
    p = _packed(ctx, args[1])
    if p.kind != "linear":
        raise ctx.fail("a linear layer needs linear weights, got convolution ones")
    w = p.int_weight()
    units, _ = ctx.shape(w)
    shape = ctx.shape(x.expr)
    data = x.expr if len(shape) == 2 else op.reshape(x.expr, (-1, shape[-1]))
    acc = qnn.dense(
        data,
        w,
        x.zp_const(),
        _kernel_zp(p),
        x.scale_const(),
        const(np.asarray(p.w_scale, "float32"), "float32"),
        units=units,
        out_dtype="int32",
    )
    bias = p.int_bias(x.scale, 0)
    if bias is not None:
        acc = nn.bias_add(acc, bias, axis=1)
    in_scale = (np.float64(x.scale) * np.asarray(p.w_scale, "float64")).astype("float32")
    out = _requantize_out(acc, in_scale, x, args[2], args[3], 1, ctx.op_name.endswith("_relu"))
    if len(shape) != 2:
        out = out.with_expr(op.reshape(out.expr, (*shape[:-1], units)))
    return out


converter("quantized::linear", "quantized::linear_relu")(_linear)


@converter("quantized::linear_dynamic", "quantized::linear_relu_dynamic")
def _linear_dynamic(ctx: OpContext, args: list[Any]) -> Expr:
    """Dynamic quantization, as fbgemm does it: the input's range (with 0) picks a uint8
    scale and zero point at run time; int8 x uint8 products accumulate in int32; the
    float bias is added to the rescaled result."""
    x = ctx.expr(args[0])
    p = _packed(ctx, args[1])
    reduce_range = bool(args[2]) if len(args) > 2 and args[2] is not None else False
    qmin, qmax = 0, 127 if reduce_range else 255
    shape = ctx.shape(x)
    data = x if len(shape) == 2 else op.reshape(x, (-1, shape[-1]))
    lo = op.minimum(op.min(data), const(np.float32(0)))
    hi = op.maximum(op.max(data), const(np.float32(0)))
    span = op.subtract(hi, lo)
    scale = op.divide(span, const(np.float32(qmax - qmin)))
    scale = op.where(op.equal(span, const(np.float32(0))), const(np.float32(0.1)), scale)
    zp = op.clip(op.round(op.subtract(const(np.float32(qmin)), op.divide(lo, scale))), qmin, qmax)
    q = op.clip(op.add(op.round(op.divide(data, scale)), zp), qmin, qmax)
    q = op.subtract(op.cast(q, "int32"), op.cast(zp, "int32"))
    w = op.cast(p.int_weight(), "int32")
    wzp = np.asarray(p.w_zero_point, "int32")
    if np.any(wzp != 0):
        w = op.subtract(w, const(wzp.reshape(-1, 1) if wzp.ndim else wzp))
    acc = nn.dense(q, w, out_dtype="int32")
    w_scale = np.asarray(p.w_scale, "float32")
    y = op.multiply(op.cast(acc, "float32"), op.multiply(scale, const(w_scale)))
    bias = p.bias_expr
    if bias is None and p.bias is not None:
        bias = p.make_param("bias", p.bias.astype("float32"))
    if bias is not None:
        y = nn.bias_add(y, bias, axis=1)
    if ctx.op_name.startswith("quantized::linear_relu"):
        y = nn.relu(y)
    units = ctx.shape(w)[0]
    return y if len(shape) == 2 else op.reshape(y, (*shape[:-1], units))


# -- element-wise -----------------------------------------------------------------------------
def _out(scale: Any, zp: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(scale, "float32").reshape(()), np.asarray(zp, "int32").reshape(())


def _relu_clip(q: QTensor) -> QTensor:
    _, hi = qrange(q.dtype)
    return q.with_expr(op.clip(q.expr, int(q.zero_point), hi))


def _binary(ctx: OpContext, args: list[Any]) -> QTensor:
    """torch adds (multiplies) the dequantized inputs in float and quantizes the result
    once; two ``qnn.add`` requantizations would round twice and differ from torch on a
    fifth of the elements, so the float form is emitted (FakeQuantizationToInteger turns
    it into integer operators that also round once, or ``qnn.mul``)."""
    a, b = _q(ctx, args[0], "first input"), _q(ctx, args[1], "second input")
    s, z = _out(args[2], args[3])
    fn = op.multiply if "mul" in ctx.op_name else op.add
    out = quantize(fn(dequantize(a), dequantize(b)), s, z, a.dtype)
    return _relu_clip(out) if ctx.op_name.endswith("_relu") else out


converter("quantized::add", "quantized::add_relu", "quantized::mul", "quantized::mul_relu")(_binary)


@converter("quantized::add_scalar", "quantized::add_scalar_relu")
def _add_scalar(ctx: OpContext, args: list[Any]) -> QTensor:
    """torch's rule: the scalar becomes ``c_q`` steps; the integers stay and the zero point
    moves by ``c_q``; when that leaves the range, the zero point goes to the range's end,
    the scale widens and ``q - zp + c_q`` is rescaled (float32 multiplier, half to even)."""
    x = _q(ctx, args[0])
    c = float(constant_arg(ctx, args[1], "scalar"))
    qmin, qmax = qrange(x.dtype)
    s, zp = float(x.scale), int(x.zero_point)
    c_q = round(c / s)
    if qmin <= zp - c_q <= qmax:
        out = QTensor(x.expr, x.scale, np.asarray(zp - c_q, "int32"), x.dtype)
        return _relu_clip(out) if ctx.op_name.endswith("_relu") else out
    if zp - c_q < qmin:
        s2, z2 = (qmax - (zp - c_q)) / (qmax - qmin) * s, qmin
    else:
        s2, z2 = ((zp - c_q) - qmin) / (qmax - qmin) * s, qmax
    multiplier = np.float32(s) * (np.float32(1.0) / np.float32(s2))
    shifted = op.add(op.cast(x.expr, "int32"), const(np.int32(c_q - zp)))
    scaled = op.multiply(op.cast(shifted, "float32"), const(np.float32(multiplier)))
    y = qnn.quantize(
        scaled, const(np.float32(1.0)), const(np.int32(z2)), -1, x.dtype, rounding=EVEN
    )
    out = QTensor(y, np.float32(s2), np.int32(z2), x.dtype)
    return _relu_clip(out) if ctx.op_name.endswith("_relu") else out


@converter("quantized::mul_scalar", "quantized::mul_scalar_relu")
def _mul_scalar(ctx: OpContext, args: list[Any]) -> QTensor:
    """torch's rule: the integers stay and the scale is multiplied; a negative scalar
    mirrors the integers in the range; zero gives zeros at scale 1."""
    x = _q(ctx, args[0])
    c = float(constant_arg(ctx, args[1], "scalar"))
    qmin, qmax = qrange(x.dtype)
    if c == 0:
        out = QTensor(op.zeros_like(x.expr), np.float32(1.0), np.int32(0), x.dtype)
    elif c > 0:
        out = QTensor(x.expr, np.float32(c * float(x.scale)), x.zero_point, x.dtype)
    else:
        mirrored = op.subtract(const(np.int32(qmax + qmin)), op.cast(x.expr, "int32"))
        out = QTensor(op.cast(mirrored, x.dtype), np.float32(-c * float(x.scale)),
                      np.int32(qmax + qmin - int(x.zero_point)), x.dtype)  # fmt: skip
    return _relu_clip(out) if ctx.op_name.endswith("_relu") else out


@converter("quantized::cat", "quantized::cat_relu")
def _qcat(ctx: OpContext, args: list[Any]) -> QTensor:
    items = [_q(ctx, v) for v in args[0]]
    dim = int(args[1])
    scale = items[0].scale if args[2] is None else args[2]
    zp = items[0].zero_point if args[3] is None else args[3]
    out = concat_q(ctx, items, dim, scale, zp)
    return _relu_clip(out) if ctx.op_name.endswith("_relu") else out


def _float_unary(ctx: OpContext, x: QTensor, fn: Any, scale: Any, zp: Any) -> QTensor:
    s, z = _out(scale, zp)
    return quantize(fn(dequantize(x)), s, z, x.dtype)


@converter("quantized::hardswish")
def _hardswish(ctx: OpContext, args: list[Any]) -> QTensor:
    x = _q(ctx, args[0])

    def hswish(v: Expr) -> Expr:
        gate = op.clip(op.add(v, const(np.float32(3))), 0.0, 6.0)
        return op.divide(op.multiply(v, gate), const(np.float32(6)))

    return _float_unary(ctx, x, hswish, args[1], args[2])


@converter("quantized::sigmoid")
def _sigmoid(ctx: OpContext, args: list[Any]) -> QTensor:
    return _float_unary(ctx, _q(ctx, args[0]), op.sigmoid, args[1], args[2])


@converter("quantized::leaky_relu")
def _leaky_relu(ctx: OpContext, args: list[Any]) -> QTensor:
    x = _q(ctx, args[0])
    slope = float(args[1])
    return _float_unary(ctx, x, lambda v: nn.leaky_relu(v, slope), args[3], args[4])


@converter("quantized::relu6")
def _relu6(ctx: OpContext, args: list[Any]) -> QTensor:
    x = _q(ctx, args[0])
    return _float_unary(ctx, x, lambda v: op.clip(v, 0.0, 6.0), x.scale, x.zero_point)


def _batch_norm(ctx: OpContext, args: list[Any]) -> QTensor:
    x = _q(ctx, args[0])
    weight, bias, mean, var = (ctx.expr(a) if a is not None else None for a in args[1:5])
    eps = float(args[5])
    if mean is None or var is None:
        raise ctx.fail("quantized batch_norm needs the running mean and variance")
    ndim = ctx.ndim(x.expr)
    inv = op.divide(const(np.float32(1)), op.sqrt(op.add(var, const(np.float32(eps)))))
    a = inv if weight is None else op.multiply(weight, inv)
    b = op.negative(op.multiply(mean, a))
    if bias is not None:
        b = op.add(b, bias)
    shape = (-1,) + (1,) * (ndim - 2)

    def bn(v: Expr) -> Expr:
        y = op.add(op.multiply(v, op.reshape(a, shape)), op.reshape(b, shape))
        return nn.relu(y) if ctx.op_name.endswith("_relu") else y

    return _float_unary(ctx, x, bn, args[6], args[7])


converter(
    "quantized::batch_norm1d",
    "quantized::batch_norm2d",
    "quantized::batch_norm3d",
    "quantized::batch_norm1d_relu",
    "quantized::batch_norm2d_relu",
    "quantized::batch_norm3d_relu",
    "quantized::batch_norm",
    "quantized::batch_norm_relu",
)(_batch_norm)


@converter("quantized::layer_norm")
def _layer_norm(ctx: OpContext, args: list[Any]) -> QTensor:
    """(input, normalized_shape, weight, bias, eps, output_scale, output_zero_point): torch
    normalizes the dequantized input in float and quantizes the result once."""
    x = _q(ctx, args[0])

    def norm(v: Expr) -> Expr:
        return layer_norm(ctx, [v, args[1], args[2], args[3], args[4]])[0]

    return _float_unary(ctx, x, norm, args[5], args[6])


@converter("quantized::matmul")
def _qmatmul(ctx: OpContext, args: list[Any]) -> QTensor:
    """(a, b, output_scale, output_zero_point): on CPUs without Ruy torch multiplies the
    dequantized operands in float and quantizes the product once; so does this (and
    FakeQuantizationToInteger turns it into ``qnn.batch_matmul`` when wanted)."""
    a, b = _q(ctx, args[0], "first input"), _q(ctx, args[1], "second input")
    if a.dtype != b.dtype:
        raise ctx.fail(f"quantized::matmul of {a.dtype} and {b.dtype}: torch requires one dtype")
    s, z = _out(args[2], args[3])
    return quantize(matmul(ctx, dequantize(a), dequantize(b)), s, z, a.dtype)
