"""ONNX converters: the rest of the standard set that compose from relay operators —
``MaxUnpool``, ``Col2Im``, ``STFT``, the ``ai.onnx.ml`` basics (``Binarizer``,
``ArrayFeatureExtractor``) and the ``ai.onnx.preview.training`` optimiser steps
(``Adagrad``, ``Momentum``, ``Adam``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.limits import check_shape, check_unroll
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr
from relaykit.op import dyn

from .common import scalar
from .signal import _dft, run_time

__all__: list[str] = []

_TRAINING = "ai.onnx.preview.training"


@converter("MaxUnpool", 9)
def _max_unpool(
    ctx: NodeContext,
    x: Expr,
    indices: Expr,
    output_shape: Expr | None = None,
    *,
    kernel_shape: Any = (),
    pads: Any = None,
    strides: Any = None,
) -> Expr:
    shape = ctx.shape(x)
    nsp = len(shape) - 2
    strides = tuple(strides or (1,) * nsp)
    pads = tuple(pads or (0,) * (2 * nsp))
    if output_shape is not None:
        out = ctx.ints(output_shape, "output_shape")
    else:
        spatial = [
            (shape[2 + i] - 1) * strides[i] + kernel_shape[i] - pads[i] - pads[nsp + i]
            for i in range(nsp)
        ]
        out = (*shape[:2], *spatial)
    total = math.prod(out)
    ctx.check_constant((total,), 8, "the output buffer")
    flat = op.scatter_elements(
        Constant(np.zeros(total, ctx.dtype(x))),
        op.reshape(indices, (-1,)),
        op.reshape(x, (-1,)),
        axis=0,
    )
    return op.reshape(flat, tuple(out))


@converter("Col2Im", 18)
def _col2im(
    ctx: NodeContext,
    x: Expr,
    image_shape: Expr,
    block_shape: Expr,
    *,
    dilations: Any = None,
    pads: Any = None,
    strides: Any = None,
) -> Expr:
    if run_time(ctx, image_shape, block_shape):
        return dyn.col2im(x, image_shape, block_shape, dilations or (), pads or (), strides or ())
    image = ctx.ints(image_shape, "image_shape")
    block = ctx.ints(block_shape, "block_shape")
    r = len(image)
    dil = tuple(dilations or (1,) * r)
    st = tuple(strides or (1,) * r)
    pd = tuple(pads or (0,) * (2 * r))
    n, ck, length = ctx.shape(x)
    k = math.prod(block)
    c = ck // k
    counts = [
        (image[i] + pd[i] + pd[r + i] - dil[i] * (block[i] - 1) - 1) // st[i] + 1 for i in range(r)
    ]
    if math.prod(counts) != length:
        raise ctx.fail(f"input has {length} blocks, the geometry gives {math.prod(counts)}")
    check_unroll(ctx.where, "the number of block positions", k * length)
    check_shape((k * length, math.prod(image)), ctx.where)
    if k * length * math.prod(image) * 4 > ctx.importer.max_fold_bytes:
        raise ctx.fail(
            f"its scatter matrix of {k * length} x {math.prod(image)} values is above the "
            f"import-time constant limit of {ctx.importer.max_fold_bytes} bytes"
        )
    scatter = np.zeros((k * length, math.prod(image)), dtype=ctx.dtype(x))
    for kk, offs in enumerate(np.ndindex(*block)):
        for ll, pos in enumerate(np.ndindex(*counts)):
            pixel = [pos[i] * st[i] - pd[i] + offs[i] * dil[i] for i in range(r)]
            if all(0 <= pixel[i] < image[i] for i in range(r)):
                scatter[kk * length + ll, np.ravel_multi_index(pixel, image)] = 1
    cols = op.reshape(x, (n * c, k * length))
    out = op.nn.dense(cols, Constant(np.ascontiguousarray(scatter.T)))
    return op.reshape(out, (n, c, *image))


@converter("STFT", 17)
def _stft(
    ctx: NodeContext,
    signal: Expr,
    frame_step: Expr,
    window: Expr | None = None,
    frame_length: Expr | None = None,
    *,
    onesided: int = 1,
) -> Expr:
    if run_time(ctx, frame_step, frame_length):  # run-time framing: dyn.stft
        empty = Constant(np.zeros(0, "int64"))
        return dyn.stft(
            signal,
            frame_step,
            window if window is not None else Constant(np.zeros(0, ctx.dtype(signal))),
            frame_length if frame_length is not None else empty,
            bool(onesided),
            window is not None,
        )
    _batch, length, _comps = ctx.shape(signal)
    step = int(ctx.scalar(frame_step, "frame_step"))
    if frame_length is not None:
        flen = int(ctx.scalar(frame_length, "frame_length"))
    elif window is not None:
        flen = ctx.shape(window)[0]
    else:
        raise ctx.fail("needs a window or a frame_length")
    if step <= 0 or flen <= 0:
        raise ctx.fail(f"frame_step ({step}) and frame_length ({flen}) must be positive")
    frames = 1 + (length - flen) // step
    ctx.check_constant((max(frames, 0), flen), 8, "the frame indices")
    idx = (np.arange(frames)[:, None] * step + np.arange(flen)[None, :]).astype("int64")
    framed = op.take(signal, Constant(idx), axis=1)  # (batch, frames, flen, comps)
    if window is not None:
        framed = op.multiply(framed, op.reshape(window, (1, 1, flen, 1)))
    return _dft(ctx, framed, None, 2, 0, onesided)


# -- ai.onnx.ml -----------------------------------------------------------------------------------


@converter("Binarizer", 1, domain="ai.onnx.ml")
def _binarizer(ctx: NodeContext, x: Expr, *, threshold: float = 0.0) -> Expr:
    dt = ctx.dtype(x)
    return op.where(op.greater(x, scalar(threshold, dt)), scalar(1, dt), scalar(0, dt))


@converter("ArrayFeatureExtractor", 1, domain="ai.onnx.ml")
def _array_feature_extractor(ctx: NodeContext, x: Expr, indices: Expr) -> Expr:
    return op.take(x, op.reshape(indices, (-1,)), axis=ctx.ndim(x) - 1)


# -- training optimisers --------------------------------------------------------------------------


def _groups(ctx: NodeContext, tensors: tuple[Expr, ...], parts: int) -> list[list[Expr]]:
    if len(tensors) % parts:
        raise ctx.fail(f"expects its tensors in {parts} groups of equal size")
    n = len(tensors) // parts
    return [list(tensors[i * n : (i + 1) * n]) for i in range(parts)]


def _f(ctx: NodeContext, e: Expr, dt: str) -> Expr:
    return op.reshape(op.cast(e, dt), ()) if ctx.shape(e) else op.cast(e, dt)


@converter("Adagrad", 1, domain=_TRAINING)
def _adagrad(ctx: NodeContext, rate: Expr, t: Expr, *tensors: Expr, **attrs: Any) -> list[Expr]:
    xs, gs, hs = _groups(ctx, tensors, 3)
    dt = ctx.dtype(xs[0])
    r = op.divide(
        _f(ctx, rate, dt),
        op.add(
            scalar(1, dt), op.multiply(_f(ctx, t, dt), scalar(attrs.get("decay_factor", 0.0), dt))
        ),
    )
    new_x: list[Expr] = []
    new_h: list[Expr] = []
    for x, g, h in zip(xs, gs, hs, strict=True):
        g = op.add(op.multiply(scalar(attrs.get("norm_coefficient", 0.0), dt), x), g)
        h2 = op.add(h, op.multiply(g, g))
        adapt = op.add(op.sqrt(h2), scalar(attrs.get("epsilon", 0.0), dt))
        new_x.append(op.subtract(x, op.divide(op.multiply(r, g), adapt)))
        new_h.append(h2)
    return new_x + new_h


@converter("Momentum", 1, domain=_TRAINING)
def _momentum(ctx: NodeContext, rate: Expr, t: Expr, *tensors: Expr, **attrs: Any) -> list[Expr]:
    xs, gs, vs = _groups(ctx, tensors, 3)
    dt = ctx.dtype(xs[0])
    alpha, beta = scalar(attrs["alpha"], dt), scalar(attrs["beta"], dt)
    beta_t = op.where(op.greater(_f(ctx, t, dt), scalar(0, dt)), beta, scalar(1, dt))
    r = _f(ctx, rate, dt)
    new_x: list[Expr] = []
    new_v: list[Expr] = []
    for x, g, v in zip(xs, gs, vs, strict=True):
        g = op.add(op.multiply(scalar(attrs["norm_coefficient"], dt), x), g)
        v2 = op.add(op.multiply(alpha, v), op.multiply(beta_t, g))
        step = (
            v2 if attrs.get("mode", "standard") == "standard" else op.add(g, op.multiply(alpha, v2))
        )
        new_x.append(op.subtract(x, op.multiply(r, step)))
        new_v.append(v2)
    return new_x + new_v


@converter("Adam", 1, domain=_TRAINING)
def _adam(ctx: NodeContext, rate: Expr, t: Expr, *tensors: Expr, **attrs: Any) -> list[Expr]:
    xs, gs, vs, hs = _groups(ctx, tensors, 4)
    dt = ctx.dtype(xs[0])
    a, b = float(attrs.get("alpha", 0.9)), float(attrs.get("beta", 0.999))
    tt = _f(ctx, t, dt)
    r = _f(ctx, rate, dt)
    one = scalar(1, dt)
    corr = op.divide(
        op.sqrt(op.subtract(one, op.power(scalar(b, dt), tt))),
        op.subtract(one, op.power(scalar(a, dt), tt)),
    )
    r_adj = op.where(op.greater(tt, scalar(0, dt)), op.multiply(r, corr), r)
    outs_x: list[Expr] = []
    outs_v: list[Expr] = []
    outs_h: list[Expr] = []
    for x, g, v, h in zip(xs, gs, vs, hs, strict=True):
        g = op.add(op.multiply(scalar(attrs.get("norm_coefficient", 0.0), dt), x), g)
        v2 = op.add(op.multiply(scalar(a, dt), v), op.multiply(scalar(1 - a, dt), g))
        h2 = op.add(
            op.multiply(scalar(b, dt), h), op.multiply(scalar(1 - b, dt), op.multiply(g, g))
        )
        denom = op.add(op.sqrt(h2), scalar(attrs.get("epsilon", 1e-6), dt))
        x2 = op.subtract(x, op.multiply(r_adj, op.divide(v2, denom)))
        post = float(attrs.get("norm_coefficient_post", 0.0))
        outs_x.append(op.multiply(scalar(1 - post, dt), x2) if post else x2)
        outs_v.append(v2)
        outs_h.append(h2)
    return outs_x + outs_v + outs_h
