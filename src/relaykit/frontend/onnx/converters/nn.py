"""ONNX converters: matrix products, normalisations, softmax, dropout, LRN."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr, TupleGetItem
from relaykit.op import dyn

from .common import flatten_to_2d, normalize_axis, scalar

__all__: list[str] = []


# -- matrix products ------------------------------------------------------------------------------


def matmul(ctx: NodeContext, a: Expr, b: Expr) -> Expr:
    """NumPy ``matmul`` semantics over relay's ``nn.dense`` / ``nn.batch_matmul``."""
    sa, sb = ctx.shape(a), ctx.shape(b)
    if not sa or not sb:
        raise ctx.fail("MatMul inputs must have rank >= 1")
    dynamic = not all(type(d) is int for d in (*sa, *sb))
    if dynamic and not (len(sb) == 2 and type(sb[0]) is int and type(sb[1]) is int):
        # ? dimensions (beyond a dynamic batch times a static matrix): NumPy's matmul
        return dyn.matmul(a, b)
    squeeze_a = len(sa) == 1
    squeeze_b = len(sb) == 1
    if squeeze_a:
        a, sa = op.reshape(a, (1, sa[0])), (1, sa[0])
    if squeeze_b:
        b, sb = op.reshape(b, (sb[0], 1)), (sb[0], 1)
    if sa[-1] != sb[-2]:
        raise ctx.fail(f"cannot multiply {sa} by {sb}: inner dimensions differ")
    m, k, n = sa[-2], sa[-1], sb[-1]
    if len(sb) == 2 and not all(type(d) is int for d in sa):  # ? leading dimensions
        flat = op.reshape(a, (-1, k)) if len(sa) != 2 else a
        out = op.nn.dense(flat, op.transpose(b, (1, 0)), units=n)
        if len(sa) != 2:  # back to a's leading dimensions, known at run time
            lead = op.strided_slice(op.shape_of(a, "int64"), [0], [len(sa) - 1])
            out = op.reshape(out, op.concatenate([lead, Constant(np.array([n], "int64"))], 0))
        return op.reshape(out, (-1,)) if squeeze_b else out
    if len(sb) == 2:
        flat = op.reshape(a, (-1, k)) if len(sa) != 2 else a
        out = op.nn.dense(flat, op.transpose(b, (1, 0)), units=n)
        out_shape = (*sa[:-1], n)
    else:
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
        bsz = math.prod(batch)
        fa = op.broadcast_to(a, (*batch, m, k)) if sa[:-2] != batch else a
        fb = op.broadcast_to(b, (*batch, k, n)) if sb[:-2] != batch else b
        out = op.nn.batch_matmul(
            op.reshape(fa, (bsz, m, k)), op.reshape(fb, (bsz, k, n)), transpose_b=False
        )
        out_shape = (*batch, m, n)
    if squeeze_a:
        out_shape = out_shape[:-2] + out_shape[-1:]
    if squeeze_b:
        out_shape = out_shape[:-1]
    return op.reshape(out, out_shape)


@converter("MatMul", 1)
def _matmul(ctx: NodeContext, a: Expr, b: Expr) -> Expr:
    return matmul(ctx, a, b)


@converter("Gemm", 1)
def _gemm(
    ctx: NodeContext,
    a: Expr,
    b: Expr,
    c: Expr | None = None,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    transA: int = 0,
    transB: int = 0,
    broadcast: int = 0,
) -> Expr:
    dt = ctx.dtype(a)
    if transA:
        a = op.transpose(a, (1, 0))
    weight = b if transB else op.transpose(b, (1, 0))
    units = ctx.shape(b)[0 if transB else 1]
    out = op.nn.dense(a, weight, units=units)
    if alpha != 1.0:
        out = op.multiply(out, scalar(alpha, dt))
    if c is not None and beta != 0:
        cc = c if beta == 1.0 else op.multiply(c, scalar(beta, dt))
        if ctx.ndim(c) == 1 and ctx.shape(c)[0] == units:
            out = op.nn.bias_add(out, cc, axis=1)
        else:
            out = op.add(out, cc)
    return out


# -- softmax family -------------------------------------------------------------------------------


def _legacy_2d(ctx: NodeContext, x: Expr, axis: int, fn: Any) -> Expr:
    """Opset < 13: the input is coerced to 2-D at ``axis`` and normalised per row."""
    shape = ctx.shape(x)
    out = fn(flatten_to_2d(ctx, x, normalize_axis(ctx, axis, len(shape))))
    return op.reshape(out, shape)


@converter("Softmax", 1)
def _softmax_v1(ctx: NodeContext, x: Expr, *, axis: int = 1) -> Expr:
    return _legacy_2d(ctx, x, axis, lambda y: op.nn.softmax(y, axis=-1))


@converter("Softmax", 13)
def _softmax(ctx: NodeContext, x: Expr, *, axis: int = -1) -> Expr:
    return op.nn.softmax(x, axis=axis)


@converter("LogSoftmax", 1)
def _log_softmax_v1(ctx: NodeContext, x: Expr, *, axis: int = 1) -> Expr:
    return _legacy_2d(ctx, x, axis, lambda y: op.nn.log_softmax(y, axis=-1))


@converter("LogSoftmax", 13)
def _log_softmax(ctx: NodeContext, x: Expr, *, axis: int = -1) -> Expr:
    return op.nn.log_softmax(x, axis=axis)


def _hardmax(ctx: NodeContext, x: Expr, axis: int) -> Expr:
    shape = ctx.shape(x)
    axis = normalize_axis(ctx, axis, len(shape))
    idx = op.argmax(x, axis=axis, keepdims=True)
    ctx.check_constant((shape[axis],), 4, "the positions")
    pos = np.arange(shape[axis], dtype="int32").reshape(
        [shape[axis] if i == axis else 1 for i in range(len(shape))]
    )
    return op.cast(op.equal(idx, Constant(pos)), ctx.dtype(x))


@converter("Hardmax", 1)
def _hardmax_v1(ctx: NodeContext, x: Expr, *, axis: int = 1) -> Expr:
    shape = ctx.shape(x)
    return _legacy_2d(ctx, x, axis, lambda y: _hardmax(ctx, y, -1)) if shape else x


@converter("Hardmax", 13)
def _hardmax_v13(ctx: NodeContext, x: Expr, *, axis: int = -1) -> Expr:
    return _hardmax(ctx, x, axis)


# -- normalisation --------------------------------------------------------------------------------


def _channel(ctx: NodeContext, v: Expr, ndim: int, axis: int = 1) -> Expr:
    """A per-channel vector shaped to broadcast against a rank-``ndim`` tensor."""
    n = ctx.shape(v)[0]
    return op.reshape(v, tuple(n if i == axis else 1 for i in range(ndim)))


@converter("BatchNormalization", 1)
def _batch_norm(
    ctx: NodeContext,
    x: Expr,
    scale: Expr,
    bias: Expr,
    mean: Expr,
    var: Expr,
    *,
    epsilon: float = 1e-5,
    momentum: float = 0.9,
    training_mode: int = 0,
    spatial: int = 1,
    is_test: int = 0,
    consumed_inputs: Any = (),
) -> Any:
    if not spatial:
        raise ctx.unsupported("spatial=0")
    if not training_mode:
        return op.nn.batch_norm(x, scale, bias, mean, var, axis=1, epsilon=epsilon)[0]
    dt = ctx.dtype(x)
    nd = ctx.ndim(x)
    axes = tuple(i for i in range(nd) if i != 1)
    bmean = op.mean(x, axes, keepdims=True)
    centred = op.subtract(x, bmean)
    bvar = op.mean(op.multiply(centred, centred), axes, keepdims=True)
    inv = op.rsqrt(op.add(bvar, scalar(epsilon, dt)))
    y = op.add(
        op.multiply(op.multiply(centred, inv), _channel(ctx, scale, nd)), _channel(ctx, bias, nd)
    )
    c = ctx.shape(mean)
    mom = scalar(momentum, dt)
    rest = scalar(1 - momentum, dt)
    run_mean = op.add(op.multiply(mean, mom), op.multiply(op.reshape(bmean, c), rest))
    run_var = op.add(op.multiply(var, mom), op.multiply(op.reshape(bvar, c), rest))
    return [y, run_mean, run_var]


def _normalize(ctx: NodeContext, x: Expr, axes: tuple[int, ...], eps: float) -> tuple[Expr, ...]:
    """(normalised x, mean, 1/std) over ``axes``, kept as size-1 axes."""
    dt = ctx.dtype(x)
    mean = op.mean(x, axes, keepdims=True)
    centred = op.subtract(x, mean)
    var = op.mean(op.multiply(centred, centred), axes, keepdims=True)
    inv = op.rsqrt(op.add(var, scalar(eps, dt)))
    return op.multiply(centred, inv), mean, inv


@converter("InstanceNormalization", 1)
def _instance_norm(ctx: NodeContext, x: Expr, scale: Expr, bias: Expr, *, epsilon: float = 1e-5):
    nd = ctx.ndim(x)
    y, _, _ = _normalize(ctx, x, tuple(range(2, nd)), epsilon)
    return op.add(op.multiply(y, _channel(ctx, scale, nd)), _channel(ctx, bias, nd))


@converter("LayerNormalization", 17)
def _layer_norm(
    ctx: NodeContext,
    x: Expr,
    scale: Expr,
    bias: Expr | None = None,
    *,
    axis: int = -1,
    epsilon: float = 1e-5,
    stash_type: int = 1,
) -> Any:
    shape = ctx.shape(x)
    axis = normalize_axis(ctx, axis, len(shape))
    single = axis == len(shape) - 1 and ctx.shape(scale) == (shape[-1],)
    wants_stats = ctx.num_outputs > 1 and any(ctx.output_names[1:])
    if single and not wants_stats and (bias is None or ctx.shape(bias) == (shape[-1],)):
        b = bias if bias is not None else Constant(np.zeros(shape[-1], ctx.dtype(x)))
        return op.nn.layer_norm(x, scale, b, axis=-1, epsilon=epsilon)
    y, mean, inv = _normalize(ctx, x, tuple(range(axis, len(shape))), epsilon)
    y = op.multiply(y, scale)
    if bias is not None:
        y = op.add(y, bias)
    return [y, mean, inv]


@converter("GroupNormalization", 18)
def _group_norm(
    ctx: NodeContext,
    x: Expr,
    scale: Expr,
    bias: Expr,
    *,
    epsilon: float = 1e-5,
    num_groups: int = 1,
    stash_type: int = 1,
) -> Expr:
    shape = ctx.shape(x)
    n, c = shape[0], shape[1]
    g = int(num_groups)
    grouped = op.reshape(x, (n, g, c // g, *shape[2:]))
    y, _, _ = _normalize(ctx, grouped, tuple(range(2, len(shape) + 1)), epsilon)
    y = op.reshape(y, shape)
    nd = len(shape)
    if ctx.shape(scale)[0] == g and g != c:  # opset 18: one scale per group
        scale = op.repeat(scale, c // g, 0)
        bias = op.repeat(bias, c // g, 0)
    return op.add(op.multiply(y, _channel(ctx, scale, nd)), _channel(ctx, bias, nd))


@converter("RMSNormalization", 23)
def _rms_norm(
    ctx: NodeContext, x: Expr, scale: Expr, *, axis: int = -1, epsilon: float = 1e-5, stash_type=1
) -> Expr:
    shape = ctx.shape(x)
    axis = normalize_axis(ctx, axis, len(shape))
    dt = ctx.dtype(x)
    ms = op.mean(op.multiply(x, x), tuple(range(axis, len(shape))), keepdims=True)
    return op.multiply(op.multiply(x, op.rsqrt(op.add(ms, scalar(epsilon, dt)))), scale)


@converter("MeanVarianceNormalization", 9)
def _mvn(ctx: NodeContext, x: Expr, *, axes: Any = (0, 2, 3)) -> Expr:
    nd = ctx.ndim(x)
    ax = tuple(sorted(normalize_axis(ctx, int(a), nd) for a in axes))
    dt = ctx.dtype(x)
    mean = op.mean(x, ax, keepdims=True)
    centred = op.subtract(x, mean)
    std = op.sqrt(op.mean(op.multiply(centred, centred), ax, keepdims=True))
    return op.divide(centred, op.add(std, scalar(1e-9, dt)))


@converter("LpNormalization", 1)
def _lp_norm(ctx: NodeContext, x: Expr, *, axis: int = -1, p: int = 2) -> Expr:
    if p == 1:
        norm = op.sum(op.abs(x), axis, keepdims=True)
    elif p == 2:
        norm = op.sqrt(op.sum(op.multiply(x, x), axis, keepdims=True))
    else:
        raise ctx.fail(f"p must be 1 or 2, got {p}")
    zero = scalar(0, ctx.dtype(x))
    safe = op.where(op.equal(norm, zero), scalar(1, ctx.dtype(x)), norm)
    return op.where(op.equal(norm, zero), zero, op.divide(x, safe))


@converter("LRN", 1)
def _lrn(
    ctx: NodeContext,
    x: Expr,
    *,
    size: int = 1,
    alpha: float = 1e-4,
    beta: float = 0.75,
    bias: float = 1.0,
) -> Expr:
    return op.nn.lrn(x, size=size, axis=1, bias=bias, alpha=alpha, beta=beta)


@converter("Dropout", 1)
def _dropout(
    ctx: NodeContext,
    x: Expr,
    ratio: Expr | None = None,
    training_mode: Expr | None = None,
    **attrs: Any,
) -> list[Expr]:
    inference = training_mode is None or (
        ctx.is_constant(training_mode) and not bool(ctx.scalar(training_mode, "training_mode"))
    )
    zero = ratio is not None and ctx.is_constant(ratio) and float(ctx.scalar(ratio, "ratio")) == 0
    if not inference and not zero and training_mode is not None:
        # training mode (maybe decided at run time): dyn.dropout, its mask drawn as ONNX's
        # reference draws it (NumPy's RandomState(seed))
        r = ratio if ratio is not None else Constant(np.array(0.5, ctx.dtype(x)))
        out = dyn.dropout(x, r, training_mode, attrs.get("seed"))
        return [TupleGetItem(out, 0), TupleGetItem(out, 1)]
    ctx.check_constant(ctx.shape(x), 1, "the mask")
    mask = Constant(np.ones(ctx.shape(x), dtype="bool"))
    return [x, mask]


@converter("Einsum", 12)
def _einsum(ctx: NodeContext, *xs: Expr, equation: str = "") -> Expr:
    return op.einsum(list(xs), equation.replace(" ", ""))


@converter("Det", 11)
def _det(ctx: NodeContext, x: Expr) -> Expr:
    return op.det(x)


@converter("SwiGLU", 28)
def _swiglu(ctx: NodeContext, a: Expr, b: Expr, *, alpha: float = 1.0) -> Expr:
    gate = op.multiply(a, op.sigmoid(op.multiply(a, scalar(alpha, ctx.dtype(a)))))
    return op.multiply(gate, b)
