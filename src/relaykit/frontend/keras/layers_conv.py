"""Converters of Keras's convolutions: ``Conv1D/2D/3D`` (with groups and causal
padding), ``DepthwiseConv1D/2D``, ``SeparableConv1D/2D`` and
``Conv1D/2D/3DTranspose``.

Keras kernels are ``(spatial..., in / groups, out)``, which is Relay's ``WIO`` /
``HWIO`` / ``DHWIO`` with channels-last data. A depthwise kernel
``(spatial..., in, multiplier)`` is the grouped kernel ``(spatial..., 1, in *
multiplier)``: output channel ``c * multiplier + m`` reads input channel ``c``, as in
Keras.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .activations import apply_activation
from .registry import LayerContext, as_tuple, layer_converter, weight_array
from .spatial import (
    DATA_LAYOUT,
    KERNEL_LAYOUT,
    channels_last,
    flat_pads,
    padding_pairs,
    spatial_rank,
)

__all__: list[str] = []

Kwargs = dict[str, Any]
_CONV = {1: nn.conv1d, 2: nn.conv2d, 3: nn.conv3d}
_CONV_T = {1: nn.conv1d_transpose, 2: nn.conv2d_transpose, 3: nn.conv3d_transpose}
_CONV_T_LAYOUT = {1: ("NCW", "IOW"), 2: ("NCHW", "IOHW"), 3: ("NCDHW", "IODHW")}


def _conv(
    ctx: LayerContext,
    x: Expr,
    kernel: np.ndarray,
    n: int,
    strides: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
    name: str,
) -> Expr:
    """A channels-last convolution of ``x`` by the Keras kernel ``kernel``."""
    layer = ctx.layer
    sizes = ctx.shape(x)[1:-1]
    window = tuple(int(k) for k in kernel.shape[:n])
    pads = padding_pairs(ctx, layer.padding, sizes, window, strides, dilation)
    return _CONV[n](
        x, ctx.weight(name, kernel), strides=strides, padding=flat_pads(pads),
        dilation=dilation, groups=groups, channels=int(kernel.shape[-1]),
        kernel_size=window, data_layout=DATA_LAYOUT[n], kernel_layout=KERNEL_LAYOUT[n],
    )  # fmt: skip


def _epilogue(ctx: LayerContext, out: Expr) -> Expr:
    layer = ctx.layer
    if getattr(layer, "use_bias", False):
        out = op.add(out, ctx.weight("bias"))
    return apply_activation(ctx, out, getattr(layer, "activation", None))


def _strides_dilation(layer: Any, n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return as_tuple(layer.strides, n), as_tuple(getattr(layer, "dilation_rate", 1), n)


@layer_converter("Conv1D", "Conv2D", "Conv3D")
def _convolution(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    n = spatial_rank(layer)
    strides, dilation = _strides_dilation(layer, n)
    kernel = weight_array(layer, "kernel")
    groups = int(getattr(layer, "groups", 1) or 1)

    def fn(x: Expr) -> Expr:
        return _epilogue(ctx, _conv(ctx, x, kernel, n, strides, dilation, groups, "kernel"))

    return channels_last(ctx, inputs[0], fn)


def _depthwise_kernel(kernel: np.ndarray) -> np.ndarray:
    *window, cin, mult = kernel.shape
    return kernel.reshape(*window, 1, cin * mult)


@layer_converter("DepthwiseConv1D", "DepthwiseConv2D")
def _depthwise(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    n = spatial_rank(layer)
    strides, dilation = _strides_dilation(layer, n)
    raw = weight_array(layer, "kernel")
    kernel = _depthwise_kernel(raw)

    def fn(x: Expr) -> Expr:
        out = _conv(ctx, x, kernel, n, strides, dilation, int(raw.shape[-2]), "kernel")
        return _epilogue(ctx, out)

    return channels_last(ctx, inputs[0], fn)


@layer_converter("SeparableConv1D", "SeparableConv2D")
def _separable(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    n = spatial_rank(layer)
    strides, dilation = _strides_dilation(layer, n)
    raw = weight_array(layer, "depthwise_kernel")
    depthwise = _depthwise_kernel(raw)
    pointwise = weight_array(layer, "pointwise_kernel")

    def fn(x: Expr) -> Expr:
        mid = _conv(ctx, x, depthwise, n, strides, dilation, int(raw.shape[-2]), "depthwise_kernel")
        one = (1,) * n
        pw = nn.conv2d if n == 2 else nn.conv1d
        out = pw(
            mid, ctx.weight("pointwise_kernel", pointwise), channels=int(pointwise.shape[-1]),
            kernel_size=one, data_layout=DATA_LAYOUT[n], kernel_layout=KERNEL_LAYOUT[n],
        )  # fmt: skip
        return _epilogue(ctx, out)

    return channels_last(ctx, inputs[0], fn)


def _transposed_length(
    size: int, window: int, stride: int, dilation: int, padding: str, output_padding: int | None
) -> int:
    """The output length Keras gives a transposed convolution."""
    span = window + (window - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return size * stride + max(span - stride, 0)
        return size * stride  # same
    pad = span // 2 if padding == "same" else 0
    return (size - 1) * stride + span - 2 * pad + output_padding


@layer_converter("Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose")
def _conv_transpose(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    n = spatial_rank(layer)
    strides, dilation = _strides_dilation(layer, n)
    kernel = weight_array(layer, "kernel")  # (spatial..., out, in)
    window = tuple(int(k) for k in kernel.shape[:n])
    if layer.padding not in ("valid", "same"):
        raise ctx.fail(f"padding {layer.padding!r} is not supported (valid, same)")
    out_pad_cfg = getattr(layer, "output_padding", None)
    out_pads = None if out_pad_cfg is None else as_tuple(out_pad_cfg, n)
    # Relay's transposed convolutions are channels-first with (in, out, spatial...) kernels
    weight = kernel.transpose([n + 1, n, *range(n)])
    data_layout, kernel_layout = _CONV_T_LAYOUT[n]

    def fn(x: Expr) -> Expr:
        sizes = ctx.shape(x)[1:-1]
        pads: list[tuple[int, int]] = []
        extra: list[int] = []
        for i in range(n):
            want = _transposed_length(
                sizes[i], window[i], strides[i], dilation[i], layer.padding,
                None if out_pads is None else out_pads[i],
            )  # fmt: skip
            full = (sizes[i] - 1) * strides[i] + (window[i] - 1) * dilation[i] + 1
            total = max(full - want, 0)
            pads.append((total // 2, total - total // 2))
            extra.append(want - (full - total))
        if any(e < 0 or e >= max(strides[i], dilation[i]) for i, e in enumerate(extra)):
            raise ctx.fail(f"the output padding {extra} is not smaller than the strides {strides}")
        first = op.transpose(x, [0, n + 1, *range(1, n + 1)])
        out = _CONV_T[n](
            first, ctx.weight("kernel", weight), strides=strides, padding=flat_pads(pads),
            dilation=dilation, channels=int(kernel.shape[n]), kernel_size=window,
            data_layout=data_layout, kernel_layout=kernel_layout, output_padding=extra,
        )  # fmt: skip
        return _epilogue(ctx, op.transpose(out, [0, *range(2, n + 2), 1]))

    return channels_last(ctx, inputs[0], fn)
