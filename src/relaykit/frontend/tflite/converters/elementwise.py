"""TFLite converters: elementwise operators and activations (``ADD``, ``SUB``, ``MUL``,
``DIV`` with fused activations, comparisons, unary math, ``RELU`` and its variants,
``LOGISTIC``, ``TANH``, ``SOFTMAX``, ``HARD_SWISH``, ``LEAKY_RELU``, ``PRELU``).

Quantized operators follow TFLite's integer kernels. ``ADD`` and ``SUB`` rescale both
operands to a common scale 2^20 times finer than the larger input scale (int32, with
``qnn.requantize``), add, and requantize the sum once to the output, as TFLite does (a
``qnn.add`` rounds each operand to the output scale first, which differs from TFLite by
one step on a good share of the elements). ``MUL`` is ``qnn.mul`` (one rounding, as
TFLite's), ``LEAKY_RELU`` a requantize of each sign with its own multiplier, ``RELU`` and
its variants with equal input and output parameters a clip in the quantized domain; the
other quantized operators compute in float32 between a dequantize and a quantize.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.tflite.quantized import (
    COMPUTE,
    ROUNDING,
    activation_bounds,
    dequantize,
    is_quantized,
    quantize,
    scale_const,
    through_float,
    zero_point_const,
)
from relaykit.frontend.tflite.registry import OpContext, converter
from relaykit.frontend.tflite.schema import read_options
from relaykit.ir.expr import Constant, Expr

from .common import fused_activation

__all__: list[str] = []

#: TFLite's left shift of the operands of a quantized ADD / SUB (int16: 15)
_LEFT_SHIFT = {"int8": 20, "uint8": 20, "int16": 15}
_FLOAT_BINARY: dict[str, Callable[[Expr, Expr], Expr]] = {
    "ADD": op.add,
    "SUB": op.subtract,
    "MUL": op.multiply,
    "DIV": op.divide,
    "MAXIMUM": op.maximum,
    "MINIMUM": op.minimum,
    "POW": op.power,
    "FLOOR_DIV": op.floor_divide,
    "FLOOR_MOD": op.floor_mod,
    "SQUARED_DIFFERENCE": lambda a, b: op.multiply(op.subtract(a, b), op.subtract(a, b)),
    "EQUAL": op.equal,
    "NOT_EQUAL": op.not_equal,
    "LESS": op.less,
    "LESS_EQUAL": op.less_equal,
    "GREATER": op.greater,
    "GREATER_EQUAL": op.greater_equal,
    "LOGICAL_AND": op.logical_and,
    "LOGICAL_OR": op.logical_or,
}
_OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions"}


def _activation_code(ctx: OpContext) -> int:
    cls = _OPTIONS.get(ctx.name)
    if cls is None:
        return 0
    opts = read_options(ctx.op, cls)
    return int(opts.FusedActivationFunction()) if opts is not None else 0


def _same_params(ctx: OpContext, a: int, b: int | None = None) -> bool:
    ta = ctx.tensor(a)
    tb = ctx.outputs[0] if b is None else ctx.tensor(b)
    if ta.quant is None or tb.quant is None:
        return ta.quant is None and tb.quant is None
    return bool(
        np.array_equal(ta.quant.scale, tb.quant.scale)
        and np.array_equal(ta.quant.zero_point, tb.quant.zero_point)
    )


@converter(*_FLOAT_BINARY)
def _binary(ctx: OpContext) -> Expr:
    a, b = ctx.expr(0), ctx.expr(1)
    code = _activation_code(ctx)
    ta, tb, out = ctx.tensor(0), ctx.tensor(1), ctx.outputs[0]
    if is_quantized(ta) and ctx.name in ("ADD", "SUB"):
        return fused_activation(ctx, _add_sub(ctx, a, b), code)
    y: Expr
    if is_quantized(ta) and ctx.name == "MUL":
        y = op.qnn.mul(
            a,
            b,
            scale_const(ctx, ta),
            zero_point_const(ctx, ta),
            scale_const(ctx, tb),
            zero_point_const(ctx, tb),
            scale_const(ctx, out),
            zero_point_const(ctx, out),
        )
        return fused_activation(ctx, y, code)
    order = ctx.name in ("MAXIMUM", "MINIMUM") and _same_params(ctx, 0, 1) and _same_params(ctx, 0)
    if is_quantized(ta) and not order and is_quantized(out):
        y = _FLOAT_BINARY[ctx.name](dequantize(ctx, a, ta), dequantize(ctx, b, tb))
        return fused_activation(ctx, quantize(ctx, y, out), code)
    if is_quantized(ta) and not order:  # comparisons of quantized tensors
        return _FLOAT_BINARY[ctx.name](dequantize(ctx, a, ta), dequantize(ctx, b, tb))
    return fused_activation(ctx, _FLOAT_BINARY[ctx.name](a, b), code)


def _requantize_to(ctx: OpContext, x: Expr, t_in: Any, scale: Any, zp: Any, dtype: str) -> Expr:
    return op.qnn.requantize(
        x,
        scale_const(ctx, t_in),
        zero_point_const(ctx, t_in),
        scale,
        zp,
        rounding=ROUNDING,
        compute_dtype=COMPUTE,
        out_dtype=dtype,
    )


def _add_sub(ctx: OpContext, a: Expr, b: Expr) -> Expr:
    """TFLite's quantized ADD / SUB: both operands in int32 at a fine common scale, one
    rounding to the output."""
    ta, tb, out = ctx.tensor(0), ctx.tensor(1), ctx.outputs[0]
    sa = float(scale_const(ctx, ta).data.numpy().max())
    sb = float(scale_const(ctx, tb).data.numpy().max())
    fine = np.float32(2.0 * max(sa, sb) / (1 << _LEFT_SHIFT.get(out.dtype, 20)))
    mid, zero = Constant(np.array(fine, np.float32)), Constant(np.array(0, np.int32))
    ra = _requantize_to(ctx, a, ta, mid, zero, "int32")
    rb = _requantize_to(ctx, b, tb, mid, zero, "int32")
    total = op.add(ra, rb) if ctx.name == "ADD" else op.subtract(ra, rb)
    return op.qnn.requantize(
        total,
        mid,
        zero,
        scale_const(ctx, out),
        zero_point_const(ctx, out),
        rounding=ROUNDING,
        compute_dtype=COMPUTE,
        out_dtype=out.dtype,
    )


def _float_unary(fn: Callable[[Expr], Expr]) -> Callable[[OpContext], Expr]:
    def convert(ctx: OpContext) -> Expr:
        return through_float(ctx, fn)

    return convert


def _hard_swish(x: Expr) -> Expr:
    three, six = Constant(np.float32(3.0)), Constant(np.float32(6.0))
    return op.multiply(x, op.divide(op.clip(op.add(x, three), 0.0, 6.0), six))


_UNARY: dict[str, Callable[[Expr], Expr]] = {
    "LOGISTIC": op.sigmoid,
    "TANH": op.tanh,
    "EXP": op.exp,
    "LOG": op.log,
    "SQRT": op.sqrt,
    "RSQRT": op.rsqrt,
    "SIN": op.sin,
    "COS": op.cos,
    "FLOOR": op.floor,
    "CEIL": op.ceil,
    "ROUND": op.round,
    "NEG": op.negative,
    "SQUARE": lambda x: op.multiply(x, x),
    "HARD_SWISH": _hard_swish,
    "ELU": lambda x: op.where(
        op.greater(x, Constant(np.float32(0))), x, op.subtract(op.exp(x), Constant(np.float32(1)))
    ),
    "GELU": op.nn.gelu,
}
for _name, _fn in _UNARY.items():
    converter(_name)(_float_unary(_fn))


@converter("ABS")
def _abs(ctx: OpContext) -> Expr:
    if is_quantized(ctx.tensor(0)):
        return through_float(ctx, op.abs)
    return op.abs(ctx.expr(0))


@converter("SELECT", "SELECT_V2")
def _select(ctx: OpContext) -> Expr:
    return op.where(ctx.expr(0), ctx.expr(1), ctx.expr(2))


@converter("LOGICAL_NOT")
def _logical_not(ctx: OpContext) -> Expr:
    return op.logical_not(ctx.expr(0))


_RELU_NAMES = {"RELU": 1, "RELU6": 3, "RELU_N1_TO_1": 2}


@converter("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1")
def _relu(ctx: OpContext) -> Expr:
    x, t = ctx.expr(0), ctx.tensor(0)
    bounds = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}
    lo, hi = bounds.get(ctx.name, (0.0, 1.0))
    if not is_quantized(t):
        return op.nn.relu(x) if hi is None else op.clip(x, lo, hi)
    if ctx.name in _RELU_NAMES and _same_params(ctx, 0):
        qlo, qhi = activation_bounds(ctx.name, ctx.outputs[0])
        return op.clip(x, qlo, qhi)
    fhi = np.inf if hi is None else hi
    return through_float(ctx, lambda v: op.clip(v, lo, float(fhi)))


@converter("LEAKY_RELU")
def _leaky_relu(ctx: OpContext) -> Expr:
    alpha = float(ctx.options("LeakyReluOptions").Alpha())
    t, out = ctx.tensor(0), ctx.outputs[0]
    if not is_quantized(t) or not alpha > 0:
        return through_float(ctx, lambda v: op.nn.leaky_relu(v, alpha))
    # TFLite: each sign requantized with its own multiplier (1 and alpha)
    x = ctx.expr(0)
    s_out, z_out = scale_const(ctx, out), zero_point_const(ctx, out)
    pos = _requantize_to(ctx, x, t, s_out, z_out, out.dtype)
    s_neg = Constant((scale_const(ctx, t).data.numpy() * np.float32(alpha)).astype(np.float32))
    neg = op.qnn.requantize(
        x,
        s_neg,
        zero_point_const(ctx, t),
        s_out,
        z_out,
        rounding=ROUNDING,
        compute_dtype=COMPUTE,
        out_dtype=out.dtype,
    )
    return op.where(op.greater_equal(x, op.cast(zero_point_const(ctx, t), t.dtype)), pos, neg)


@converter("PRELU")
def _prelu(ctx: OpContext) -> Expr:
    alpha_t = ctx.tensor(1)
    alpha = ctx.expr(1)
    if is_quantized(alpha_t):
        alpha = dequantize(ctx, alpha, alpha_t)

    def prelu(v: Expr) -> Expr:
        zero = Constant(np.float32(0))
        return op.where(op.greater_equal(v, zero), v, op.multiply(v, alpha))

    return through_float(ctx, prelu)


@converter("SOFTMAX")
def _softmax(ctx: OpContext) -> Expr:
    beta = float(ctx.options("SoftmaxOptions").Beta())

    def softmax(v: Expr) -> Expr:
        if beta != 1.0:
            v = op.multiply(v, Constant(np.float32(beta)))
        return op.nn.softmax(v, axis=-1)

    return through_float(ctx, softmax)


@converter("LOG_SOFTMAX")
def _log_softmax(ctx: OpContext) -> Expr:
    return through_float(ctx, lambda v: op.nn.log_softmax(v, axis=-1))
