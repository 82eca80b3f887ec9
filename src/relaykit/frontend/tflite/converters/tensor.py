"""TFLite converters: shape and data movement (``RESHAPE``, ``SQUEEZE``,
``EXPAND_DIMS``, ``CONCATENATION``, ``PAD``, ``PADV2``, ``MIRROR_PAD``, ``TRANSPOSE``,
``STRIDED_SLICE``, ``SLICE``, ``SPLIT``, ``SPLIT_V``, ``GATHER``, ``PACK``, ``UNPACK``,
``TILE``, ``BROADCAST_TO``, ``DEPTH_TO_SPACE``, ``SPACE_TO_DEPTH``).

They move quantized values without changing them (TFLite gives their inputs and outputs
the same parameters); ``CONCATENATION`` of inputs with different parameters becomes
``qnn.concatenate``, and ``PAD`` of a quantized tensor pads with its zero point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.tflite.quantized import is_quantized, scale_const, zero_point_const
from relaykit.frontend.tflite.registry import OpContext, converter
from relaykit.frontend.tflite.schema import read_options
from relaykit.ir.expr import Expr, Tuple

from .common import fused_activation

__all__: list[str] = []


def _ints(values: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1)]


@converter("RESHAPE")
def _reshape(ctx: OpContext) -> Expr:
    x = ctx.expr(0)
    if ctx.has_input(1) and ctx.is_const(1):
        shape = _ints(ctx.value(1, "shape"))
    else:
        opts = read_options(ctx.op, "ReshapeOptions")
        if opts is not None and opts.NewShapeLength():
            shape = _ints(opts.NewShapeAsNumpy())
        else:
            shape = list(ctx.outputs[0].shape)
    return op.reshape(x, tuple(shape))


@converter("SQUEEZE")
def _squeeze(ctx: OpContext) -> Expr:
    opts = ctx.options("SqueezeOptions")
    dims = _ints(opts.SqueezeDimsAsNumpy()) if opts.SqueezeDimsLength() else None
    return op.squeeze(ctx.expr(0), axis=dims)


@converter("EXPAND_DIMS")
def _expand_dims(ctx: OpContext) -> Expr:
    axis = _ints(ctx.value(1, "axis"))[0]
    ndim = len(ctx.shape(ctx.expr(0)))
    return op.expand_dims(ctx.expr(0), axis if axis >= 0 else axis + ndim + 1)


@converter("CONCATENATION")
def _concatenation(ctx: OpContext) -> Expr:
    opts = ctx.options("ConcatenationOptions")
    axis = int(opts.Axis())
    xs = [ctx.expr(i) for i in range(len(ctx.inputs))]
    out = ctx.outputs[0]
    if is_quantized(out):
        ts = [ctx.tensor(i) for i in range(len(ctx.inputs))]
        same = all(
            t.quant is not None
            and out.quant is not None
            and np.array_equal(t.quant.scale, out.quant.scale)
            and np.array_equal(t.quant.zero_point, out.quant.zero_point)
            for t in ts
        )
        if not same:
            y = op.qnn.concatenate(
                Tuple(xs),
                Tuple([scale_const(ctx, t) for t in ts]),
                Tuple([zero_point_const(ctx, t) for t in ts]),
                scale_const(ctx, out),
                zero_point_const(ctx, out),
                axis=axis,
            )
            return fused_activation(ctx, y, opts.FusedActivationFunction())
    y = op.concatenate(xs, axis=axis)
    return fused_activation(ctx, y, opts.FusedActivationFunction())


def _pad_value(ctx: OpContext) -> float | int:
    if ctx.name == "PADV2" and ctx.has_input(2):
        return ctx.value(2, "constant value").reshape(-1)[0].item()
    t = ctx.tensor(0)
    if is_quantized(t) and t.quant is not None:
        return int(np.asarray(t.quant.zero_point).reshape(-1)[0])
    return 0


@converter("PAD", "PADV2")
def _pad(ctx: OpContext) -> Expr:
    pads = ctx.value(1, "paddings").astype(np.int64).reshape(-1, 2)
    width = tuple((int(a), int(b)) for a, b in pads)
    return op.nn.pad(ctx.expr(0), width, pad_value=_pad_value(ctx))


@converter("MIRROR_PAD")
def _mirror_pad(ctx: OpContext) -> Expr:
    mode = int(ctx.options("MirrorPadOptions").Mode())  # 0 REFLECT, 1 SYMMETRIC
    pads = ctx.value(1, "paddings").astype(np.int64).reshape(-1, 2)
    width = tuple((int(a), int(b)) for a, b in pads)
    return op.nn.pad(ctx.expr(0), width, pad_mode="reflect" if mode == 0 else "symmetric")


@converter("TRANSPOSE")
def _transpose(ctx: OpContext) -> Expr:
    return op.transpose(ctx.expr(0), tuple(_ints(ctx.value(1, "permutation"))))


def _slice_bounds(
    shape: Sequence[int], begin: list[int], end: list[int], strides: list[int], opts: Any
) -> tuple[list[int], list[int], list[int]]:
    """Begin / end / stride per axis with TFLite's begin and end masks applied."""
    bmask = int(opts.BeginMask())
    emask = int(opts.EndMask())
    smask = int(opts.ShrinkAxisMask())
    b, e = list(begin), list(end)
    for i, dim in enumerate(shape[: len(b)]):
        forward = strides[i] > 0
        if bmask >> i & 1:
            b[i] = 0 if forward else dim - 1
        if emask >> i & 1:
            e[i] = dim if forward else -dim - 1
        if smask >> i & 1:
            start = b[i] + dim if b[i] < 0 else b[i]
            b[i], e[i], strides[i] = start, start + 1, 1
    return b, e, strides


@converter("STRIDED_SLICE")
def _strided_slice(ctx: OpContext) -> Expr:
    opts = ctx.options("StridedSliceOptions")
    if int(opts.EllipsisMask()) or int(opts.NewAxisMask()):
        raise ctx.fail("ellipsis and new-axis masks of STRIDED_SLICE are not supported")
    x = ctx.expr(0)
    shape = ctx.shape(x)
    begin = _ints(ctx.value(1, "begin"))
    end = _ints(ctx.value(2, "end"))
    strides = _ints(ctx.value(3, "strides")) if ctx.has_input(3) else [1] * len(begin)
    b, e, s = _slice_bounds(shape, begin, end, strides, opts)
    y = op.strided_slice(x, b, e, s, axes=list(range(len(b))))
    shrink = [i for i in range(len(b)) if int(opts.ShrinkAxisMask()) >> i & 1]
    return op.squeeze(y, axis=shrink) if shrink else y


@converter("SLICE")
def _slice(ctx: OpContext) -> Expr:
    x = ctx.expr(0)
    shape = ctx.shape(x)
    begin = _ints(ctx.value(1, "begin"))
    size = _ints(ctx.value(2, "size"))
    end = [shape[i] if s < 0 else begin[i] + s for i, s in enumerate(size)]
    return op.strided_slice(x, begin, end, axes=list(range(len(begin))))


@converter("SPLIT")
def _split(ctx: OpContext) -> list[Expr]:
    axis = _ints(ctx.value(0, "axis"))[0]
    n = int(ctx.options("SplitOptions").NumSplits())
    parts = op.split(ctx.expr(1), n, axis=axis)
    return [parts[i] for i in range(n)]


@converter("SPLIT_V")
def _split_v(ctx: OpContext) -> list[Expr]:
    x = ctx.expr(0)
    sizes = _ints(ctx.value(1, "size splits"))
    axis = _ints(ctx.value(2, "axis"))[0]
    dim = ctx.shape(x)[axis]
    if -1 in sizes:
        sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
    cuts = list(np.cumsum(sizes)[:-1])
    parts = op.split(x, [int(c) for c in cuts], axis=axis)
    return [parts[i] for i in range(len(sizes))]


@converter("GATHER")
def _gather(ctx: OpContext) -> Expr:
    opts = ctx.options("GatherOptions")
    batch_dims = int(opts.BatchDims()) if hasattr(opts, "BatchDims") else 0
    return op.take(ctx.expr(0), ctx.expr(1), axis=int(opts.Axis()), batch_dims=batch_dims)


@converter("PACK")
def _pack(ctx: OpContext) -> Expr:
    axis = int(ctx.options("PackOptions").Axis())
    return op.stack([ctx.expr(i) for i in range(len(ctx.inputs))], axis=axis)


@converter("UNPACK")
def _unpack(ctx: OpContext) -> list[Expr]:
    opts = ctx.options("UnpackOptions")
    axis, n = int(opts.Axis()), int(opts.Num())
    parts = op.split(ctx.expr(0), n, axis=axis)
    return [op.squeeze(parts[i], axis=[axis]) for i in range(n)]


@converter("TILE")
def _tile(ctx: OpContext) -> Expr:
    return op.tile(ctx.expr(0), tuple(_ints(ctx.value(1, "multiples"))))


@converter("BROADCAST_TO")
def _broadcast_to(ctx: OpContext) -> Expr:
    return op.broadcast_to(ctx.expr(0), tuple(_ints(ctx.value(1, "shape"))))


@converter("DEPTH_TO_SPACE")
def _depth_to_space(ctx: OpContext) -> Expr:
    block = int(ctx.options("DepthToSpaceOptions").BlockSize())
    return op.nn.depth_to_space(ctx.expr(0), block, layout="NHWC", mode="DCR")


@converter("SPACE_TO_DEPTH")
def _space_to_depth(ctx: OpContext) -> Expr:
    block = int(ctx.options("SpaceToDepthOptions").BlockSize())
    return op.nn.space_to_depth(ctx.expr(0), block, layout="NHWC")
