"""Converters of the less common aten layers: 1-d and 3-d pooling, instance
normalisation, weight normalisation, activations beyond the ReLU family,
3-d and bicubic upsampling, grid sampling and the loss functions.

The 2-d convolutions, pooling and normalisations are in :mod:`.ops_nn`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import image, nn

from .registry import OpContext, as_int_list, converter, is_float

__all__: list[str] = []


def _opt(args: list[Any], i: int, default: Any = None) -> Any:
    return args[i] if len(args) > i and args[i] is not None else default


def _float(ctx: OpContext, value: Any) -> Expr:
    x = ctx.expr(value)
    return x if is_float(ctx.dtype(x)) else op.cast(x, ctx.default_dtype)


# -- pooling --------------------------------------------------------------------------------
def batched(ctx: OpContext, value: Any, n: int, fn: Callable[[Expr], Expr]) -> Expr:
    """``fn`` (an ``n``-d layer on N, C, spatial...) applied to ``value``, which may also
    be unbatched (C, spatial...), as torch's layers accept."""
    x = ctx.expr(value)
    if ctx.ndim(x) == n + 1:
        return op.squeeze(fn(op.expand_dims(x, 0)), [0])
    return fn(x)


def _pool_window(args: list[Any], n: int) -> tuple[list[int], list[int], list[int]]:
    kernel = as_int_list(args[1], n)
    stride = as_int_list(args[2], n) if len(args) > 2 and args[2] not in (None, []) else kernel
    return kernel, stride, as_int_list(_opt(args, 3, 0), n)


def _max_pool(n: int, relay_fn: Any) -> Any:
    def convert(ctx: OpContext, args: list[Any]) -> Any:
        # (input, kernel_size, stride, padding, dilation, ceil_mode)
        kernel, stride, padding = _pool_window(args, n)
        dilation = as_int_list(_opt(args, 4, 1), n)
        out = batched(ctx, args[0], n, lambda x: relay_fn(
            x, kernel, stride, dilation, padding, ceil_mode=bool(_opt(args, 5, False)),
        ))  # fmt: skip
        return [out, None] if "with_indices" in ctx.op_name else out

    return convert


def _avg_pool(n: int, relay_fn: Any) -> Any:
    def convert(ctx: OpContext, args: list[Any]) -> Expr:
        # (input, kernel_size, stride, padding, ceil_mode, count_include_pad[, divisor])
        kernel, stride, padding = _pool_window(args, n)
        if _opt(args, 6) is not None:
            raise ctx.fail("average pooling with divisor_override is not supported")
        return batched(ctx, args[0], n, lambda x: relay_fn(
            x, kernel, stride, [1] * n, padding,
            ceil_mode=bool(_opt(args, 4, False)), count_include_pad=bool(_opt(args, 5, True)),
        ))  # fmt: skip

    return convert


converter("max_pool1d", "max_pool1d_with_indices")(_max_pool(1, nn.max_pool1d))
converter("max_pool3d", "max_pool3d_with_indices")(_max_pool(3, nn.max_pool3d))
converter("avg_pool1d")(_avg_pool(1, nn.avg_pool1d))
converter("avg_pool3d")(_avg_pool(3, nn.avg_pool3d))


def _adaptive(n: int, relay_fn: Any, with_indices: bool) -> Any:
    def convert(ctx: OpContext, args: list[Any]) -> Any:
        out = batched(ctx, args[0], n, lambda x: relay_fn(x, as_int_list(args[1], n)))
        return [out, None] if with_indices else out

    return convert


converter("adaptive_avg_pool1d")(_adaptive(1, nn.adaptive_avg_pool1d, False))
converter("adaptive_avg_pool3d")(_adaptive(3, nn.adaptive_avg_pool3d, False))
converter("adaptive_max_pool1d")(_adaptive(1, nn.adaptive_max_pool1d, True))
converter("adaptive_max_pool3d")(_adaptive(3, nn.adaptive_max_pool3d, True))


# -- normalisation ---------------------------------------------------------------------------
@converter("instance_norm")
def _instance_norm(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn)
    x = ctx.expr(args[0])
    shape, dt = ctx.shape(x), ctx.dtype(x)
    eps = ctx.expr(float(_opt(args, 7, 1e-5)), dt)
    bshape = [shape[1]] + [1] * (len(shape) - 2)
    if args[5] or args[3] is None:  # statistics of each instance
        axes = list(range(2, len(shape)))
        mean = op.mean(x, axes, keepdims=True)
        var = op.variance(x, axes, keepdims=True)
    else:  # track_running_stats in eval mode: the running statistics
        mean = op.reshape(ctx.expr(args[3]), bshape)
        var = op.reshape(ctx.expr(args[4]), bshape)
    out = op.multiply(op.subtract(x, mean), op.rsqrt(op.add(var, eps)))
    if args[1] is not None:
        out = op.multiply(out, op.reshape(ctx.expr(args[1]), bshape))
    if args[2] is not None:
        out = op.add(out, op.reshape(ctx.expr(args[2]), bshape))
    return out


@converter("_weight_norm")
def _weight_norm(ctx: OpContext, args: list[Any]) -> Expr:
    # (v, g, dim): v * g / ||v|| over every axis but dim
    v, g = ctx.expr(args[0]), ctx.expr(args[1])
    dim = int(_opt(args, 2, 0))
    n = ctx.ndim(v)
    axes = None if dim == -1 else [a for a in range(n) if a != ctx.axis(v, dim)]
    norm = op.sqrt(op.sum(op.multiply(v, v), axes, keepdims=True))
    return op.multiply(v, op.divide(g, norm))


# -- activations ---------------------------------------------------------------------------
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _elu_like(ctx: OpContext, x: Expr, alpha: float, scale: float, input_scale: float) -> Expr:
    """``scale * (max(0, x) + min(0, alpha * (exp(x * input_scale) - 1)))``."""
    dt = ctx.dtype(x)
    c = lambda v: ctx.expr(float(v), dt)  # noqa: E731
    neg = op.multiply(c(alpha), op.subtract(op.exp(op.multiply(x, c(input_scale))), c(1.0)))
    out = op.where(op.greater(x, c(0.0)), x, neg)
    return out if scale == 1.0 else op.multiply(c(scale), out)


@converter("selu")
def _selu(ctx: OpContext, args: list[Any]) -> Expr:
    return _elu_like(ctx, _float(ctx, args[0]), _SELU_ALPHA, _SELU_SCALE, 1.0)


@converter("celu")
def _celu(ctx: OpContext, args: list[Any]) -> Expr:
    alpha = float(_opt(args, 1, 1.0))
    return _elu_like(ctx, _float(ctx, args[0]), alpha, 1.0, 1.0 / alpha)


@converter("glu")
def _glu(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    axis = ctx.axis(x, _opt(args, 1, -1))
    half = ctx.shape(x)[axis] // 2
    a = op.strided_slice(x, [0], [half], axes=[axis])
    b = op.strided_slice(x, [half], [2 * half], axes=[axis])
    return op.multiply(a, op.sigmoid(b))


@converter("log_sigmoid")
def _log_sigmoid(ctx: OpContext, args: list[Any]) -> Expr:
    # min(x, 0) - log(1 + exp(-|x|)): no overflow for large |x|
    x = _float(ctx, args[0])
    dt = ctx.dtype(x)
    tail = op.log(op.add(ctx.expr(1.0, dt), op.exp(op.negative(op.abs(x)))))
    return op.subtract(op.minimum(x, ctx.expr(0.0, dt)), tail)


@converter("threshold")
def _threshold(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, threshold, value): x if x > threshold else value
    x = ctx.expr(args[0])
    dt = ctx.dtype(x)
    return op.where(op.greater(x, ctx.expr(args[1], dt)), x, ctx.expr(args[2], dt))


@converter("prelu", "_prelu_kernel")
def _prelu(ctx: OpContext, args: list[Any]) -> Expr:
    x, alpha = ctx.expr(args[0]), ctx.expr(args[1])
    n_alpha = math.prod(ctx.shape(alpha))
    if ctx.ndim(x) >= 2 and n_alpha == ctx.shape(x)[1] and n_alpha > 1:
        return nn.prelu(x, op.reshape(alpha, [n_alpha]), axis=1)
    scalar = op.reshape(alpha, [])
    return op.where(op.greater_equal(x, ctx.expr(0.0, ctx.dtype(x))), x, op.multiply(scalar, x))


# -- resizing and sampling -------------------------------------------------------------------
def _out_size(ctx: OpContext, x: Expr, size: Any, scales: Any, n: int) -> list[int]:
    if size is not None:
        return as_int_list(size, n)
    if scales is None or any(s is None for s in scales):
        raise ctx.fail("upsampling needs an output size or scale factors")
    shape = ctx.shape(x)[2:]
    return [math.floor(d * float(f)) for d, f in zip(shape, scales, strict=True)]


@converter("upsample_nearest3d")
def _upsample_nearest3d(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, output_size, scales_d, scales_h, scales_w) / .vec(input, output_size, scales)
    x = ctx.expr(args[0])
    scales = args[2] if len(args) == 3 else args[2:5]
    return image.resize3d(
        x, _out_size(ctx, x, args[1], scales, 3), method="nearest_neighbor",
        coordinate_transformation_mode="asymmetric", rounding_method="floor",
    )  # fmt: skip


@converter("upsample_trilinear3d")
def _upsample_trilinear3d(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, output_size, align_corners, scales_d, scales_h, scales_w) / .vec(..., scales)
    x = ctx.expr(args[0])
    scales = args[3] if len(args) == 4 else args[3:6]
    mode = "align_corners" if args[2] else "half_pixel"
    return image.resize3d(
        x, _out_size(ctx, x, args[1], scales, 3), method="linear",
        coordinate_transformation_mode=mode,
    )  # fmt: skip


@converter("upsample_bicubic2d")
def _upsample_bicubic2d(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, output_size, align_corners, scales_h, scales_w) / .vec(..., scales)
    x = ctx.expr(args[0])
    scales = args[3] if len(args) == 4 else args[3:5]
    mode = "align_corners" if args[2] else "half_pixel"
    return image.resize2d(
        x, _out_size(ctx, x, args[1], scales, 2), method="cubic",
        coordinate_transformation_mode=mode, cubic_alpha=-0.75,
    )  # fmt: skip


_GRID_METHODS = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_GRID_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


@converter("grid_sampler", "grid_sampler_2d", "grid_sampler_3d")
def _grid_sampler(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, grid, interpolation_mode, padding_mode, align_corners); grid is N,H,W,2
    x, grid = ctx.expr(args[0]), ctx.expr(args[1])
    rank = ctx.ndim(x)
    layout = "NCHW" if rank == 4 else "NCDHW"
    # Relay's grid has the coordinates first: N,2,H,W (N,3,D,H,W)
    grid = op.transpose(grid, [0, rank - 1, *range(1, rank - 1)])
    return image.grid_sample(
        x, grid, method=_GRID_METHODS[int(args[2])], layout=layout,
        padding_mode=_GRID_PADDING[int(args[3])], align_corners=bool(args[4]),
    )  # fmt: skip


# -- losses -------------------------------------------------------------------------------
def _reduce_loss(ctx: OpContext, loss: Expr, reduction: Any) -> Expr:
    """torch's reduction numbers: 0 none, 1 mean, 2 sum."""
    r = int(reduction if reduction is not None else 1)
    if r == 0:
        return loss
    return op.mean(loss) if r == 1 else op.sum(loss)


@converter("mse_loss")
def _mse_loss(ctx: OpContext, args: list[Any]) -> Expr:
    diff = op.subtract(ctx.expr(args[0]), ctx.expr(args[1]))
    return _reduce_loss(ctx, op.multiply(diff, diff), _opt(args, 2, 1))


@converter("l1_loss")
def _l1_loss(ctx: OpContext, args: list[Any]) -> Expr:
    diff = op.subtract(ctx.expr(args[0]), ctx.expr(args[1]))
    return _reduce_loss(ctx, op.abs(diff), _opt(args, 2, 1))


def _nll(ctx: OpContext, logp: Expr, target: Any, weight: Any, reduction: Any, ignore: int) -> Expr:
    """Negative log-likelihood of class-scores ``logp`` (N, C, ...) at ``target`` (N, ...)."""
    target = ctx.expr(target)
    dt = ctx.dtype(logp)
    mask = op.cast(op.not_equal(target, ctx.expr(ignore, ctx.dtype(target))), dt)
    safe = op.where(op.equal(target, ctx.expr(ignore, ctx.dtype(target))),
                    op.zeros_like(target), target)  # fmt: skip
    picked = op.squeeze(op.gather(logp, 1, op.expand_dims(safe, 1)), [1])
    w = mask
    if weight is not None:
        w = op.multiply(op.take(ctx.expr(weight), safe, axis=0), mask)
    loss = op.negative(op.multiply(picked, w))
    r = int(reduction if reduction is not None else 1)
    if r == 1:
        return op.divide(op.sum(loss), op.sum(w))
    return _reduce_loss(ctx, loss, r)


@converter("nll_loss", "nll_loss_nd", "nll_loss2d")
def _nll_loss(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, target, weight, reduction, ignore_index)
    logp = ctx.expr(args[0])
    if ctx.ndim(logp) == 1:  # a single sample: (C,) with a 0-d target
        logp, target = op.expand_dims(logp, 0), op.expand_dims(ctx.expr(args[1]), 0)
    else:
        target = args[1]
    return _nll(ctx, logp, target, _opt(args, 2), _opt(args, 3, 1), int(_opt(args, 4, -100)))


@converter("cross_entropy_loss")
def _cross_entropy_loss(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, target, weight, reduction, ignore_index, label_smoothing)
    x = _float(ctx, args[0])
    if ctx.ndim(x) == 1:
        x = op.expand_dims(x, 0)
        target: Any = op.expand_dims(ctx.expr(args[1]), 0)
    else:
        target = ctx.expr(args[1])
    if float(_opt(args, 5, 0.0)) != 0.0:
        raise ctx.fail("cross_entropy with label_smoothing is not supported")
    logp = nn.log_softmax(x, axis=1)
    if is_float(ctx.dtype(target)):  # class probabilities
        loss = op.negative(op.sum(op.multiply(logp, target), axis=[1]))
        return _reduce_loss(ctx, loss, _opt(args, 3, 1))
    return _nll(ctx, logp, target, _opt(args, 2), _opt(args, 3, 1), int(_opt(args, 4, -100)))
