"""TFLite converters: elementwise operators and activations (``ADD``, ``SUB``, ``MUL``,
``DIV`` with fused activations, comparisons, unary math, ``RELU`` and its variants,
``LOGISTIC``, ``TANH``, ``SOFTMAX``, ``HARD_SWISH``, ``LEAKY_RELU``, ``PRELU``).

Quantized ``ADD`` / ``SUB`` / ``MUL`` become ``qnn.add`` / ``qnn.subtract`` /
``qnn.mul``; ``RELU`` and its variants with equal input and output parameters a clip in
the quantized domain; the other quantized operators compute in float32 between a
dequantize and a quantize.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relaykit import op
from relaykit.frontend.tflite.quantized import (
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

_QNN_BINARY = {"ADD": op.qnn.add, "SUB": op.qnn.subtract, "MUL": op.qnn.mul}
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
    if is_quantized(ta) and ctx.name in _QNN_BINARY:
        y = _QNN_BINARY[ctx.name](
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
    return through_float(ctx, lambda v: op.nn.leaky_relu(v, alpha))


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
