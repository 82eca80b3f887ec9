"""ONNX converters: the ``com.microsoft`` quantized operators onnxruntime's quantizer writes
in its QOperator format (``QLinearAdd``, ``QLinearMul``, ``QGemm``, ``QLinearConcat``,
``QLinearGlobalAveragePool``, ``QLinearAveragePool``, ``QLinearLeakyRelu``,
``QLinearSigmoid``, ``QLinearSoftmax``), imported as QNN operators, and the dynamic
quantization ones its graph optimizer writes (``MatMulIntegerToFloat``,
``DynamicQuantizeMatMul``).

Their scales and zero points must be constants (onnxruntime's quantizer always writes
initializers): a run-time one, a non-positive scale or a zero point of another dtype is
an error naming the node.

``QGemm`` is ``qnn.dense`` -> int32 bias -> ``qnn.requantize``; ``QLinearSigmoid`` is
``qnn.sigmoid``. onnxruntime computes the others by rounding once from float (a lookup
table, or the exact float sum), which QNN's integer forms (``qnn.add``,
``qnn.concatenate``, ``qnn.leaky_relu``: each input requantized first) do not reproduce
bit for bit, and QNN has no integer average pooling or softmax: those are
``qnn.dequantize`` -> the float operator -> ``qnn.quantize``, as TVM's frontend imports
most of them, and FakeQuantizationToInteger turns such chains into QNN operators.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr

from .conv import _pool
from .qlinear import _matmul_integer, _qnn_matmul, _requantize
from .quant import EVEN, _dynamic_quantize
from .quant_params import QParams, check_scale_values, const_qparams

__all__: list[str] = []

MS = "com.microsoft"


def _qp(ctx: NodeContext, x: Expr, scale: Expr | None, zp: Expr | None, what: str) -> QParams:
    """Per-tensor parameters of the quantized tensor ``x``."""
    return const_qparams(ctx, scale, zp, ctx.dtype(x), what)


def _out_qp(ctx: NodeContext, x: Expr, scale: Expr | None, zp: Expr | None) -> QParams:
    """Per-tensor parameters of the output, of ``x``'s dtype."""
    return const_qparams(ctx, scale, zp, ctx.dtype(x), "output")


def _through_float(ctx: NodeContext, x: Expr, xq: QParams, yq: QParams, fn: Any) -> Expr:
    """``quantize(fn(dequantize(x)))`` in ``x``'s dtype."""
    y = fn(op.qnn.dequantize(x, xq.scale, xq.zero_point))
    return op.qnn.quantize(y, yq.scale, yq.zero_point, out_dtype=ctx.dtype(x), rounding=EVEN)


def _binary(name: str) -> Any:
    """``QLinearAdd`` / ``QLinearMul``: onnxruntime rounds once, from the exact float sum or
    product, so they are dequantize -> add / multiply -> quantize (as TVM's frontend
    imports them; FakeQuantizationToInteger turns the chain into integer operators that
    round once, or ``qnn.mul``)."""

    def convert(
        ctx: NodeContext,
        a: Expr,
        a_scale: Expr | None = None,
        a_zp: Expr | None = None,
        b: Expr | None = None,
        b_scale: Expr | None = None,
        b_zp: Expr | None = None,
        c_scale: Expr | None = None,
        c_zp: Expr | None = None,
    ) -> Expr:
        if b is None:
            raise ctx.fail("its input B is missing")
        if ctx.dtype(a) != ctx.dtype(b):
            raise ctx.fail(f"A is {ctx.dtype(a)} but B is {ctx.dtype(b)}; they must match")
        aq, bq = _qp(ctx, a, a_scale, a_zp, "A"), _qp(ctx, b, b_scale, b_zp, "B")
        cq = _out_qp(ctx, a, c_scale, c_zp)
        fa = op.qnn.dequantize(a, aq.scale, aq.zero_point)
        fb = op.qnn.dequantize(b, bq.scale, bq.zero_point)
        y = op.add(fa, fb) if name == "add" else op.multiply(fa, fb)
        return op.qnn.quantize(y, cq.scale, cq.zero_point, out_dtype=ctx.dtype(a), rounding=EVEN)

    return convert


converter("QLinearAdd", 1, MS)(_binary("add"))
converter("QLinearMul", 1, MS)(_binary("mul"))


@converter("QGemm", 1, MS)
def _qgemm(
    ctx: NodeContext,
    a: Expr,
    a_scale: Expr | None = None,
    a_zp: Expr | None = None,
    b: Expr | None = None,
    b_scale: Expr | None = None,
    b_zp: Expr | None = None,
    c: Expr | None = None,
    y_scale: Expr | None = None,
    y_zp: Expr | None = None,
    *,
    alpha: float = 1.0,
    transA: int = 0,
    transB: int = 0,
) -> Expr:
    """``alpha * A' @ B' + C`` with an int32 bias ``C`` in the accumulator's scale; a
    quantized result when ``y_scale`` is given, else float32."""
    if b is None:
        raise ctx.fail("its input B is missing")
    if ctx.ndim(a) != 2 or ctx.ndim(b) != 2:
        raise ctx.fail(f"A and B must be 2-D, got shapes {ctx.shape(a)} and {ctx.shape(b)}")
    if float(alpha) != 1.0:
        raise ctx.unsupported(f"alpha={alpha} (only 1.0, which onnxruntime's quantizer writes)")
    if transA:
        a = op.transpose(a, (1, 0))
    if transB:
        b = (
            Constant(np.ascontiguousarray(b.data.numpy().T))
            if isinstance(b, Constant)
            else op.transpose(b, (1, 0))
        )
    n = ctx.shape(b)[1]
    aq = _qp(ctx, a, a_scale, a_zp, "A")
    bq = const_qparams(ctx, b_scale, b_zp, ctx.dtype(b), "B", n)
    acc = _qnn_matmul(ctx, a, b, aq, bq)
    if c is not None:
        if ctx.dtype(c) != "int32":
            raise ctx.fail(f"its bias C must be int32, got {ctx.dtype(c)}")
        acc = op.add(acc, c)
    in_scale = aq.scale_values.astype(np.float32) * bq.scale_values.astype(np.float32)
    if y_scale is None:
        if y_zp is not None:
            raise ctx.fail("it has y_zero_point but no y_scale")
        scale = Constant(in_scale.reshape(-1) if in_scale.size > 1 else in_scale.reshape(()))
        return op.qnn.dequantize(acc, scale, Constant(np.array(0, np.int32)), axis=1)
    dtype = ctx.dtype(y_zp) if y_zp is not None else ctx.dtype(a)
    yq = const_qparams(ctx, y_scale, y_zp, dtype, "y")
    return _requantize(acc, in_scale, yq, 1, dtype)


@converter("QLinearConcat", 1, MS)
def _qlinear_concat(ctx: NodeContext, y_scale: Expr, y_zp: Expr, *rest: Expr, axis: int = 0):
    if not rest or len(rest) % 3:
        raise ctx.fail(
            f"takes Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples, got "
            f"{len(rest) + 2} inputs"
        )
    xs = list(rest[0::3])
    dtype = ctx.dtype(xs[0])
    for x in xs:
        if ctx.dtype(x) != dtype:
            raise ctx.fail(f"its inputs mix {dtype} and {ctx.dtype(x)}")
    triples = [rest[k : k + 3] for k in range(0, len(rest), 3)]
    qps = [_qp(ctx, x, s, z, f"input {k}") for k, (x, s, z) in enumerate(triples)]
    yq = const_qparams(ctx, y_scale, y_zp, dtype, "Y")
    nd = ctx.ndim(xs[0])
    if not -nd <= axis < nd:
        raise ctx.fail(f"axis {axis} is out of range for tensors of rank {nd}")
    floats = [op.qnn.dequantize(x, q.scale, q.zero_point) for x, q in zip(xs, qps, strict=True)]
    y = op.concatenate(floats, axis=axis % nd)
    return op.qnn.quantize(y, yq.scale, yq.zero_point, out_dtype=dtype, rounding=EVEN)


def _unary_params(ctx, x, x_scale, x_zp, y_scale, y_zp) -> tuple[QParams, QParams]:
    return _qp(ctx, x, x_scale, x_zp, "X"), _out_qp(ctx, x, y_scale, y_zp)


@converter("QLinearLeakyRelu", 1, MS)
def _qlinear_leaky_relu(
    ctx: NodeContext,
    x: Expr,
    x_scale: Expr | None = None,
    x_zp: Expr | None = None,
    y_scale: Expr | None = None,
    y_zp: Expr | None = None,
    *,
    alpha: float = 0.01,
) -> Expr:
    xq, yq = _unary_params(ctx, x, x_scale, x_zp, y_scale, y_zp)
    return _through_float(ctx, x, xq, yq, lambda f: op.nn.leaky_relu(f, float(alpha)))


@converter("QLinearSigmoid", 1, MS)
def _qlinear_sigmoid(
    ctx: NodeContext,
    x: Expr,
    x_scale: Expr | None = None,
    x_zp: Expr | None = None,
    y_scale: Expr | None = None,
    y_zp: Expr | None = None,
) -> Expr:
    xq, yq = _unary_params(ctx, x, x_scale, x_zp, y_scale, y_zp)
    return op.qnn.sigmoid(x, xq.scale, xq.zero_point, yq.scale, yq.zero_point)


@converter("QLinearGlobalAveragePool", 1, MS)
def _qlinear_global_avg_pool(
    ctx: NodeContext,
    x: Expr,
    x_scale: Expr | None = None,
    x_zp: Expr | None = None,
    y_scale: Expr | None = None,
    y_zp: Expr | None = None,
    *,
    channels_last: int = 0,
) -> Expr:
    xq, yq = _unary_params(ctx, x, x_scale, x_zp, y_scale, y_zp)
    nd = ctx.ndim(x)
    if nd < 3:
        raise ctx.fail(f"X must have a batch, a channel and spatial axes, got rank {nd}")
    axes = tuple(range(1, nd - 1)) if channels_last else tuple(range(2, nd))
    return _through_float(ctx, x, xq, yq, lambda f: op.mean(f, axes, keepdims=True))


@converter("QLinearAveragePool", 1, MS)
def _qlinear_avg_pool(
    ctx: NodeContext,
    x: Expr,
    x_scale: Expr | None = None,
    x_zp: Expr | None = None,
    y_scale: Expr | None = None,
    y_zp: Expr | None = None,
    *,
    channels_last: int = 0,
    **attrs: Any,
) -> Expr:
    xq, yq = _unary_params(ctx, x, x_scale, x_zp, y_scale, y_zp)
    nd = ctx.ndim(x)
    if channels_last:
        to_first = (0, nd - 1, *range(1, nd - 1))
        to_last = (0, *range(2, nd), 1)

        def pool(f: Expr) -> Expr:
            return op.transpose(_pool(ctx, op.transpose(f, to_first), "avg", attrs), to_last)

        return _through_float(ctx, x, xq, yq, pool)
    return _through_float(ctx, x, xq, yq, lambda f: _pool(ctx, f, "avg", attrs))


@converter("QLinearSoftmax", 1, MS)
def _qlinear_softmax(
    ctx: NodeContext,
    x: Expr,
    x_scale: Expr | None = None,
    x_zp: Expr | None = None,
    y_scale: Expr | None = None,
    y_zp: Expr | None = None,
    *,
    axis: int = -1,
    opset: int = 13,
) -> Expr:
    """Softmax along ``axis`` (``opset`` >= 13) or over the axes from ``axis`` on, as
    ONNX's Softmax before opset 13 does."""
    xq, yq = _unary_params(ctx, x, x_scale, x_zp, y_scale, y_zp)
    shape = ctx.shape(x)
    nd = len(shape)
    if not -nd <= axis < max(nd, 1):
        raise ctx.fail(f"axis {axis} is out of range for a tensor of rank {nd}")
    ax = axis % nd

    def softmax(f: Expr) -> Expr:
        if opset >= 13 or ax == nd - 1:
            return op.nn.softmax(f, axis=ax)
        flat = op.reshape(f, (math.prod(shape[:ax]), math.prod(shape[ax:])))
        return op.reshape(op.nn.softmax(flat, axis=1), shape)

    return _through_float(ctx, x, xq, yq, softmax)


def _integer_to_float(
    ctx: NodeContext,
    acc: Expr,
    a_scale: Expr,
    b_scale: Expr,
    bias: Expr | None,
    n: int,
) -> Expr:
    """``acc * a_scale * b_scale (+ bias)`` in float32; ``b_scale`` one value or one per
    output column, ``a_scale`` one value (it may be computed at run time)."""
    for what, s, ok in (("a_scale", a_scale, (1,)), ("b_scale", b_scale, (1, n))):
        size = math.prod(ctx.shape(s))
        if ctx.dtype(s) != "float32" or size not in ok:
            raise ctx.fail(
                f"its {what} must be float32 with {' or '.join(map(str, ok))} values, got "
                f"{ctx.dtype(s)}{list(ctx.shape(s))}"
            )
        if isinstance(s, Constant):
            check_scale_values(s.data.numpy(), what, ctx.where)
    scale = op.multiply(op.reshape(a_scale, ()), op.reshape(b_scale, (-1,) if n > 1 else ()))
    out = op.multiply(op.cast(acc, "float32"), scale)
    return out if bias is None else op.add(out, bias)


@converter("MatMulIntegerToFloat", 1, MS)
def _matmul_integer_to_float(
    ctx: NodeContext,
    a: Expr,
    b: Expr | None = None,
    a_scale: Expr | None = None,
    b_scale: Expr | None = None,
    a_zp: Expr | None = None,
    b_zp: Expr | None = None,
    bias: Expr | None = None,
) -> Expr:
    """``(A - a_zp) @ (B - b_zp) * a_scale * b_scale + bias``: the integer product as
    ``MatMulInteger`` (QNN), then scaled to float32."""
    if b is None or a_scale is None or b_scale is None:
        raise ctx.fail("it needs A, B, a_scale and b_scale")
    acc = _matmul_integer(ctx, a, b, a_zp, b_zp)
    return _integer_to_float(ctx, acc, a_scale, b_scale, bias, ctx.shape(b)[-1])


@converter("DynamicQuantizeMatMul", 1, MS)
def _dynamic_quantize_matmul(
    ctx: NodeContext,
    a: Expr,
    b: Expr | None = None,
    b_scale: Expr | None = None,
    b_zp: Expr | None = None,
    bias: Expr | None = None,
) -> Expr:
    """``A`` quantized to uint8 as ``DynamicQuantizeLinear`` does, then
    ``MatMulIntegerToFloat``."""
    if b is None or b_scale is None:
        raise ctx.fail("it needs A, B and b_scale")
    qa, a_scale, a_zp = _dynamic_quantize(ctx, a)
    acc = _matmul_integer(ctx, qa, b, a_zp, b_zp)
    return _integer_to_float(ctx, acc, a_scale, b_scale, bias, ctx.shape(b)[-1])
