"""Converters of aten's neural-network ops: convolutions, pooling, normalisation,
linear layers and matrix products, softmax, upsampling and padding (attention:
:mod:`.ops_attention`).

Linear layers become ``nn.dense`` (+ ``nn.bias_add``) on the weight as PyTorch
stores it (``[out, in]``): ``addmm(b, x, t(w))`` and ``mm(x, t(w))`` from
core-aten graphs are recognised, so a backend sees the same dense layer either
way.
"""

from __future__ import annotations

import math
from typing import Any

from relaykit import op
from relaykit.ir.expr import Call, Expr
from relaykit.op import image, nn

from .ops_math import promote
from .registry import OpContext, as_int_list, converter, dtype_name

__all__: list[str] = []


def _opt(args: list[Any], i: int, default: Any = None) -> Any:
    return args[i] if len(args) > i and args[i] is not None else default


# -- convolutions ----------------------------------------------------------------------------
def _conv(
    ctx: OpContext,
    x: Any,
    weight: Any,
    bias: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    transposed: bool = False,
    output_padding: Any = 0,
    groups: int = 1,
) -> Expr:
    x, weight = ctx.expr(x), ctx.expr(weight)
    wshape = ctx.shape(weight)
    rank = len(wshape) - 2
    if rank not in (1, 2, 3):
        raise ctx.fail(f"{rank}-d convolutions are not supported (1-d, 2-d and 3-d are)")
    kernel = list(wshape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0] * rank
        else:  # "same" (stride 1): torch puts the odd pixel at the end
            dil = as_int_list(dilation, rank)
            total = [d * (k - 1) for d, k in zip(dil, kernel, strict=True)]
            padding = [t // 2 for t in total] + [t - t // 2 for t in total]
    stride, dilation = as_int_list(stride, rank), as_int_list(dilation, rank)
    padding = as_int_list(padding, rank)
    output_padding = as_int_list(output_padding, rank)
    if rank == 1:  # as a 2-d convolution of height 1
        x = op.expand_dims(x, 2)
        weight = op.expand_dims(weight, 2)
        kernel = [1, *kernel]
        stride, dilation, output_padding = [1, *stride], [1, *dilation], [0, *output_padding]
        padding = [0, padding[0]] if len(padding) == 1 else [0, padding[0], 0, padding[1]]
    if rank == 3:
        out = _conv3d(x, weight, wshape, kernel, stride, padding, dilation, transposed,
                      output_padding, int(groups))  # fmt: skip
    elif transposed:
        channels = wshape[1] * int(groups)
        out = nn.conv2d_transpose(
            x, weight, strides=stride, padding=padding, dilation=dilation, groups=int(groups),
            channels=channels, kernel_size=kernel, kernel_layout="IOHW",
            output_padding=output_padding,
        )  # fmt: skip
    else:
        out = nn.conv2d(
            x, weight, strides=stride, padding=padding, dilation=dilation, groups=int(groups),
            channels=wshape[0], kernel_size=kernel,
        )  # fmt: skip
    if bias is not None:
        out = nn.bias_add(out, ctx.expr(bias), axis=1)
    return op.squeeze(out, [2]) if rank == 1 else out


def _conv3d(
    x: Expr, weight: Expr, wshape: Any, kernel: list[int], stride: list[int],
    padding: list[int], dilation: list[int], transposed: bool, output_padding: list[int],
    groups: int,
) -> Expr:  # fmt: skip
    if transposed:
        return nn.conv3d_transpose(
            x, weight, strides=stride, padding=padding, dilation=dilation, groups=groups,
            channels=wshape[1] * groups, kernel_size=kernel, output_padding=output_padding,
        )  # fmt: skip
    return nn.conv3d(
        x, weight, strides=stride, padding=padding, dilation=dilation, groups=groups,
        channels=wshape[0], kernel_size=kernel,
    )  # fmt: skip


@converter("_convolution", "convolution")
def _convolution(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, ...)
    return _conv(ctx, *args[:9])


@converter("conv2d", "conv1d", "conv3d")
def _conv2d(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, weight, bias, stride, padding, dilation, groups)
    stride, padding, dilation = _opt(args, 3, 1), _opt(args, 4, 0), _opt(args, 5, 1)
    return _conv(
        ctx, args[0], args[1], _opt(args, 2), stride, padding, dilation, groups=_opt(args, 6, 1)
    )


@converter("conv_transpose2d", "conv_transpose1d", "conv_transpose3d")
def _conv_transpose(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, weight, bias, stride, padding, output_padding, groups, dilation)
    x, w, b = args[0], args[1], _opt(args, 2)
    return _conv(
        ctx, x, w, b, _opt(args, 3, 1), _opt(args, 4, 0), _opt(args, 7, 1), True,
        _opt(args, 5, 0), _opt(args, 6, 1),
    )  # fmt: skip


# -- pooling --------------------------------------------------------------------------------
def _pool_args(args: list[Any]) -> tuple[list[int], list[int], list[int]]:
    kernel = as_int_list(args[1], 2)
    stride = as_int_list(args[2], 2) if len(args) > 2 and args[2] not in (None, []) else kernel
    padding = as_int_list(_opt(args, 3, 0), 2)
    return kernel, stride, padding


@converter("max_pool2d", "max_pool2d_with_indices")
def _max_pool2d(ctx: OpContext, args: list[Any]) -> Any:
    kernel, stride, padding = _pool_args(args)
    dilation = as_int_list(_opt(args, 4, 1), 2)
    ceil = bool(_opt(args, 5, False))
    out = nn.max_pool2d(ctx.expr(args[0]), kernel, stride, dilation, padding, ceil_mode=ceil)
    return [out, None] if "with_indices" in ctx.op_name else out


@converter("avg_pool2d")
def _avg_pool2d(ctx: OpContext, args: list[Any]) -> Expr:
    kernel, stride, padding = _pool_args(args)
    ceil = bool(_opt(args, 4, False))
    include_pad = bool(_opt(args, 5, True))
    if _opt(args, 6) is not None:
        raise ctx.fail("avg_pool2d with divisor_override is not supported")
    return nn.avg_pool2d(
        ctx.expr(args[0]), kernel, stride, (1, 1), padding, ceil_mode=ceil,
        count_include_pad=include_pad,
    )  # fmt: skip


@converter("adaptive_avg_pool2d", "_adaptive_avg_pool2d")
def _adaptive_avg_pool2d(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    size = as_int_list(args[1], 2)
    if size == [1, 1]:
        return nn.global_avg_pool2d(x)
    return nn.adaptive_avg_pool2d(x, size)


@converter("adaptive_max_pool2d")
def _adaptive_max_pool2d(ctx: OpContext, args: list[Any]) -> list[Any]:
    x = ctx.expr(args[0])
    size = as_int_list(args[1], 2)
    return [nn.adaptive_max_pool2d(x, size), None]


# -- normalisation ---------------------------------------------------------------------------
def _affine(ctx: OpContext, value: Any, channels: int, fill: float, dtype: str) -> Expr:
    if value is None:
        return op.full(ctx.expr(fill, dtype), [channels], dtype)
    return ctx.expr(value)


def _batch_norm(ctx: OpContext, x: Any, w: Any, b: Any, mean: Any, var: Any, eps: float) -> Expr:
    x = ctx.expr(x)
    c, dt = ctx.shape(x)[1], ctx.dtype(x)
    gamma, beta = _affine(ctx, w, c, 1.0, dt), _affine(ctx, b, c, 0.0, dt)
    if mean is None or var is None:
        raise ctx.fail("batch_norm without running statistics (training mode) is not supported")
    return nn.batch_norm(x, gamma, beta, ctx.expr(mean), ctx.expr(var), 1, float(eps))[0]


@converter("batch_norm")
def _batch_norm_op(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
    if args[5]:
        raise ctx.fail("batch_norm in training mode: call model.eval() before importing")
    return _batch_norm(ctx, args[0], args[1], args[2], args[3], args[4], args[7])


@converter("_native_batch_norm_legit_no_training")
def _native_bn(ctx: OpContext, args: list[Any]) -> list[Any]:
    # (input, weight, bias, running_mean, running_var, momentum, eps) -> (out, save_mean, rstd)
    return [_batch_norm(ctx, args[0], args[1], args[2], args[3], args[4], args[6]), None, None]


@converter("native_batch_norm")
def _native_bn_any(ctx: OpContext, args: list[Any]) -> list[Any]:
    # (input, weight, bias, running_mean, running_var, training, momentum, eps)
    if args[5]:
        raise ctx.fail("batch_norm in training mode: call model.eval() before compiling")
    return [_batch_norm(ctx, args[0], args[1], args[2], args[3], args[4], args[7]), None, None]


def layer_norm(ctx: OpContext, args: list[Any]) -> tuple[Expr, Expr, Expr]:
    """``aten::layer_norm``'s (output, mean, 1/std) from (input, normalized_shape, weight,
    bias, eps)."""
    x = ctx.expr(args[0])
    shape, dt = ctx.shape(x), ctx.dtype(x)
    norm = as_int_list(args[1])
    eps = float(_opt(args, 4, 1e-5))
    axes = list(range(len(shape) - len(norm), len(shape)))
    mean = op.mean(x, axes, keepdims=True)
    var = op.variance(x, axes, keepdims=True)
    rstd = op.rsqrt(op.add(var, ctx.expr(eps, dt)))
    if len(norm) == 1:
        width = norm[0]
        gamma, beta = _affine(ctx, args[2], width, 1.0, dt), _affine(ctx, args[3], width, 0.0, dt)
        out = nn.layer_norm(x, gamma, beta, axis=-1, epsilon=eps)
    else:
        out = op.multiply(op.subtract(x, mean), rstd)
        if args[2] is not None:
            out = op.multiply(out, ctx.expr(args[2]))
        if args[3] is not None:
            out = op.add(out, ctx.expr(args[3]))
    return out, mean, rstd


@converter("layer_norm")
def _layer_norm_op(ctx: OpContext, args: list[Any]) -> Expr:
    return layer_norm(ctx, args)[0]


@converter("native_layer_norm")
def _native_layer_norm(ctx: OpContext, args: list[Any]) -> list[Expr]:
    return list(layer_norm(ctx, args))


def _group_norm(ctx: OpContext, x: Any, groups: int, w: Any, b: Any, eps: float) -> Expr:
    x = ctx.expr(x)
    shape, dt = list(ctx.shape(x)), ctx.dtype(x)
    n, c = shape[0], shape[1]
    g = op.reshape(x, [n, int(groups), -1])
    mean = op.mean(g, [2], keepdims=True)
    var = op.variance(g, [2], keepdims=True)
    out = op.multiply(op.subtract(g, mean), op.rsqrt(op.add(var, ctx.expr(float(eps), dt))))
    out = op.reshape(out, shape)
    bshape = [c] + [1] * (len(shape) - 2)
    if w is not None:
        out = op.multiply(out, op.reshape(ctx.expr(w), bshape))
    if b is not None:
        out = op.add(out, op.reshape(ctx.expr(b), bshape))
    return out


@converter("group_norm")
def _group_norm_op(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, num_groups, weight, bias, eps, cudnn_enabled)
    return _group_norm(ctx, args[0], args[1], _opt(args, 2), _opt(args, 3), _opt(args, 4, 1e-5))


@converter("native_group_norm")
def _native_group_norm(ctx: OpContext, args: list[Any]) -> list[Any]:
    # (input, weight, bias, N, C, HxW, group, eps)
    return [_group_norm(ctx, args[0], args[6], args[1], args[2], args[7]), None, None]


# -- linear layers and products -----------------------------------------------------------
def _untransposed(ctx: OpContext, w: Expr) -> Expr | None:
    """``e`` when ``w`` is ``transpose(e, [1, 0])``, else None."""
    if (
        isinstance(w, Call)
        and getattr(w.op, "name", None) == "transpose"
        and list(w.attrs["axes"] or []) == [1, 0]
    ):
        return w.args[0]
    return None


def _matmul_2d(ctx: OpContext, x: Expr, w: Expr) -> Expr:
    """``x @ w`` for a 2-d ``w`` (``x`` of any rank >= 1) as ``nn.dense``."""
    weight = _untransposed(ctx, w)
    if weight is None:
        weight = op.transpose(w, [1, 0])
    return nn.dense(x, weight, units=ctx.shape(w)[1])


@converter("linear")
def _linear(ctx: OpContext, args: list[Any]) -> Expr:
    x, w = ctx.expr(args[0]), ctx.expr(args[1])
    # a weight vector: x @ w
    out = matmul(ctx, x, w) if ctx.ndim(w) == 1 else nn.dense(x, w, units=ctx.shape(w)[0])
    bias = _opt(args, 2)
    if bias is None:
        return out
    bias = ctx.expr(bias)
    if ctx.ndim(bias) == 1 and ctx.ndim(out) >= 1:
        return nn.bias_add(out, bias, axis=-1)
    return op.add(out, bias)


@converter("addmm")
def _addmm(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, mat1, mat2, beta, alpha): beta * input + alpha * (mat1 @ mat2)
    bias, x, w = ctx.expr(args[0]), ctx.expr(args[1]), ctx.expr(args[2])
    beta, alpha = _opt(args, 3, 1), _opt(args, 4, 1)
    out = _matmul_2d(ctx, x, w)
    if alpha != 1:
        out = op.multiply(out, ctx.expr(alpha, ctx.dtype(out)))
    if beta != 1:
        bias = op.multiply(bias, ctx.expr(beta, ctx.dtype(bias)))
    if ctx.ndim(bias) == 1:
        return nn.bias_add(out, bias, axis=-1)
    return op.add(out, bias)


@converter("mm")
def _mm(ctx: OpContext, args: list[Any]) -> Expr:
    return _matmul_2d(ctx, ctx.expr(args[0]), ctx.expr(args[1]))


@converter("bmm")
def _bmm(ctx: OpContext, args: list[Any]) -> Expr:
    return nn.batch_matmul(ctx.expr(args[0]), ctx.expr(args[1]), transpose_b=False)


@converter("baddbmm")
def _baddbmm(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, batch1, batch2, beta, alpha)
    out = _bmm(ctx, [args[1], args[2]])
    beta, alpha = _opt(args, 3, 1), _opt(args, 4, 1)
    dt = ctx.dtype(out)
    if alpha != 1:
        out = op.multiply(out, ctx.expr(alpha, dt))
    if beta == 0:
        return out
    bias = ctx.expr(args[0])
    if beta != 1:
        bias = op.multiply(bias, ctx.expr(beta, dt))
    return op.add(bias, out)


def matmul(ctx: OpContext, a: Any, b: Any) -> Expr:
    """``torch.matmul``: vectors, matrices and broadcast batches."""
    a, b = promote(ctx, a, b)
    sa, sb = list(ctx.shape(a)), list(ctx.shape(b))
    if len(sa) == 1 and len(sb) == 1:  # (1, k) x (1, k)^T
        k = sa[0]
        return op.reshape(nn.dense(op.reshape(a, [1, k]), op.reshape(b, [1, k]), units=1), [])
    if len(sb) == 1:
        return op.squeeze(matmul(ctx, a, op.expand_dims(b, 1)), [-1])
    if len(sa) == 1:
        return op.squeeze(matmul(ctx, op.expand_dims(a, 0), b), [-2])
    if len(sb) == 2 and len(sa) == 2:
        return _matmul_2d(ctx, a, b)
    if len(sb) == 2:  # batched x one matrix: one batch of all rows
        rows = int(math.prod(sa[:-1]))
        a3 = op.reshape(a, [1, rows, sa[-1]])
        out = nn.batch_matmul(a3, op.expand_dims(b, 0), transpose_b=False)
        return op.reshape(out, [*sa[:-1], sb[-1]])
    batch = list(_broadcast(sa[:-2], sb[:-2]))
    nb = int(math.prod(batch))
    a3 = op.reshape(op.broadcast_to(a, [*batch, *sa[-2:]]), [nb, *sa[-2:]])
    b3 = op.reshape(op.broadcast_to(b, [*batch, *sb[-2:]]), [nb, *sb[-2:]])
    out = nn.batch_matmul(a3, b3, transpose_b=False)
    return op.reshape(out, [*batch, sa[-2], sb[-1]]) if len(batch) != 1 else out


def _broadcast(a: list[int], b: list[int]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    return tuple(max(x, y) for x, y in zip(a, b, strict=True))


@converter("matmul", "__matmul__")
def _matmul(ctx: OpContext, args: list[Any]) -> Expr:
    return matmul(ctx, args[0], args[1])


# -- softmax --------------------------------------------------------------------------------
def _softmax_like(relay_fn: Any) -> Any:
    def convert(ctx: OpContext, args: list[Any]) -> Expr:
        # softmax(x, dim, dtype) / _softmax(x, dim, half_to_float)
        x = ctx.expr(args[0])
        dtype = args[2] if len(args) > 2 and not isinstance(args[2], bool) else None
        if dtype is not None:
            x = op.cast(x, dtype_name(dtype))
        elif not ctx.dtype(x).startswith("float"):
            x = op.cast(x, ctx.default_dtype)
        return relay_fn(x, axis=ctx.axis(x, args[1]))

    return convert


converter("softmax", "_softmax", "_safe_softmax")(_softmax_like(nn.softmax))
converter("log_softmax", "_log_softmax")(_softmax_like(nn.log_softmax))


# -- resizing and padding --------------------------------------------------------------------
def _resize(
    ctx: OpContext, x: Any, size: Any, scales: Any, method: str, align_corners: bool = False
) -> Expr:
    x = ctx.expr(x)
    shape = ctx.shape(x)
    if size is not None:
        out_size = as_int_list(size, 2)
    elif scales is not None:
        out_size = [math.floor(d * float(f)) for d, f in zip(shape[2:], scales, strict=True)]
    else:
        raise ctx.fail("upsampling needs an output size or scale factors")
    if method == "nearest_neighbor":
        return image.resize2d(
            x, out_size, method="nearest_neighbor",
            coordinate_transformation_mode="asymmetric", rounding_method="floor",
        )  # fmt: skip
    mode = "align_corners" if align_corners else "half_pixel"
    return image.resize2d(x, out_size, method="linear", coordinate_transformation_mode=mode)


@converter("upsample_nearest2d")
def _upsample_nearest2d(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, output_size, scales_h, scales_w) / .vec(input, output_size, scale_factors)
    if len(args) == 3:
        return _resize(ctx, args[0], args[1], args[2], "nearest_neighbor")
    scales = None if args[2] is None else [args[2], args[3]]
    return _resize(ctx, args[0], args[1], scales, "nearest_neighbor")


@converter("upsample_bilinear2d")
def _upsample_bilinear2d(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, output_size, align_corners, scales_h, scales_w) / .vec(..., scale_factors)
    if len(args) == 4:
        return _resize(ctx, args[0], args[1], args[3], "linear", bool(args[2]))
    scales = None if args[3] is None else [args[3], args[4]]
    return _resize(ctx, args[0], args[1], scales, "linear", bool(args[2]))


@converter("constant_pad_nd", "pad")
def _pad(ctx: OpContext, args: list[Any]) -> Expr:
    # constant_pad_nd(input, pad, value) / pad(input, pad, mode, value)
    x = ctx.expr(args[0])
    pads = as_int_list(args[1])
    mode = "constant"
    if len(args) > 3 or (len(args) > 2 and isinstance(args[2], str)):
        mode, value = args[2], _opt(args, 3, 0.0)
        if mode not in _PAD_MODES:
            raise ctx.fail(f"padding mode {mode!r} is not supported ({', '.join(_PAD_MODES)} are)")
    else:
        value = _opt(args, 2, 0.0)
    n = ctx.ndim(x)
    width = [[0, 0] for _ in range(n)]
    for i in range(len(pads) // 2):  # torch lists the last dimension first
        width[n - 1 - i] = [pads[2 * i], pads[2 * i + 1]]
    if any(p < 0 for w in width for p in w):
        raise ctx.fail("negative padding (cropping) is not supported")
    if mode != "constant":
        return nn.pad(x, width, pad_mode=_PAD_MODES[mode])
    return nn.pad(x, width, ctx.expr(float(value or 0.0), ctx.dtype(x)))


#: torch's padding modes -> Relay's
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


@converter("pixel_shuffle")
def _pixel_shuffle(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    r = int(args[1])
    n, c, h, w = ctx.shape(x)
    out = op.reshape(x, [n, c // (r * r), r, r, h, w])
    out = op.transpose(out, [0, 1, 4, 2, 5, 3])
    return op.reshape(out, [n, c // (r * r), h * r, w * r])
