"""Operators that compute gradients: ``nn.max_pool2d_grad``, ``nn.avg_pool2d_grad`` and
``nn.conv2d_backward_weight`` (TVM's names and attributes).

``max_pool2d_grad(out_grad, data, ...)`` sends each output's gradient to the first
largest element of its window; ``avg_pool2d_grad`` spreads it evenly over the window's
counted positions (as ``avg_pool2d`` counts them: padding only with
``count_include_pad``); both take the pooling's own attributes and give a tensor shaped
like ``data``. ``conv2d_backward_weight(grad, data, ...)`` is the gradient of
``nn.conv2d`` with respect to its ``OIHW`` weight, given the output gradient ``grad``
and the input ``data`` (``NCHW``), grouped convolutions included.

>>> from relaykit import relay
>>> dy, x = relay.var("dy", shape=(1, 4, 6, 6)), relay.var("x", shape=(1, 2, 8, 8))
>>> conv2d_backward_weight(dy, x, kernel_size=(3, 3)).attrs.kernel_size
[3, 3]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._numeric import as_out, lowest_finite
from relaykit.op._relations import differ, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

from .geometry import (
    attr_pair,
    canonical_shape,
    from_canonical,
    get_pad_tuple2d,
    pad4,
    pair,
    to_canonical,
    windows,
)
from .operands import acc_dtype
from .pooling import _POOL2D_ATTRS, _pool2d_geometry, _window_counts, pool2d_rel

__all__ = ["max_pool2d_grad", "avg_pool2d_grad", "conv2d_backward_weight"]


# -- pooling gradients -----------------------------------------------------------------------------


def _pool_grad_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    grad = tensor_arg(arg_types, 0, "out_grad")
    data = tensor_arg(arg_types, 1, "data")
    out = pool2d_rel([data], attrs)
    assert isinstance(out, TensorType)
    if len(grad.shape) != len(out.shape) or any(
        differ(a, b) for a, b in zip(grad.shape, out.shape, strict=True)
    ):
        raise TypeRelError(f"out_grad {grad} must have the pooling's output shape {out}")
    return data


def _scatter_windows(
    grad_canon: np.ndarray, data_canon: np.ndarray, attrs: Attrs, weights: Any
) -> np.ndarray:
    """The padded-input gradient: ``weights(kr, ks)`` gives, per kernel tap, the factor
    (N, C, OH, OW) by which each output's gradient reaches that tap's input position."""
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr), (eh, ew), (oh, ow) = _pool2d_geometry(
        data_canon.shape, attrs
    )
    n, c, h, w = data_canon.shape
    acc = np.zeros((n, c, h + pt + pb + eh, w + pl + pr + ew), np.float64)
    for r in range(kh):
        for s in range(kw):
            rows = slice(r * dh, r * dh + (oh - 1) * sh + 1, sh)
            cols = slice(s * dw, s * dw + (ow - 1) * sw + 1, sw)
            acc[:, :, rows, cols] += grad_canon * weights(r, s)
    return acc[:, :, pt : pt + h, pl : pl + w]


def _max_pool2d_grad_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    grad, data = ins
    layout = attrs.layout
    x = to_canonical(data, layout, "NCHW")
    g = to_canonical(grad, attrs.out_layout or layout, "NCHW").astype(np.float64)
    (kh, kw), strides, dil, (pt, pl, pb, pr), (eh, ew), out_hw = _pool2d_geometry(x.shape, attrs)
    xp = np.pad(
        x, ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew)), constant_values=lowest_finite(x.dtype)
    )
    win = windows(xp, kh, kw, strides, dil, out_hw)
    first = win.reshape(*win.shape[:4], kh * kw).argmax(axis=-1)  # the first largest tap
    out = _scatter_windows(g, x, attrs, lambda r, s: first == r * kw + s)
    return as_out(from_canonical(out, "NCHW", layout), data.dtype)


def _avg_pool2d_grad_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    grad, data = ins
    layout = attrs.layout
    x = to_canonical(data, layout, "NCHW")
    g = to_canonical(grad, attrs.out_layout or layout, "NCHW").astype(np.float64)
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr), (eh, ew), (oh, ow) = _pool2d_geometry(
        x.shape, attrs
    )
    h, w = x.shape[2], x.shape[3]
    pos_h, pos_w = np.arange(h + pt + pb + eh), np.arange(w + pl + pr + ew)
    if attrs.count_include_pad:
        valid_h, valid_w = pos_h < h + pt + pb, pos_w < w + pl + pr
    else:
        valid_h = (pos_h >= pt) & (pos_h < pt + h)
        valid_w = (pos_w >= pl) & (pos_w < pl + w)
    count = np.outer(
        _window_counts(valid_h, kh, sh, dh, oh), _window_counts(valid_w, kw, sw, dw, ow)
    )
    share = g / np.maximum(count, 1)
    out = _scatter_windows(share, x, attrs, lambda r, s: 1.0)
    return as_out(from_canonical(out, "NCHW", layout), data.dtype)


define_op(
    "nn.max_pool2d_grad",
    num_inputs=2,
    attrs=_POOL2D_ATTRS,
    attrs_type_key="relay.attrs.MaxPool2DAttrs",
    type_rel=_pool_grad_rel,
    compute=_max_pool2d_grad_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Gradient of nn.max_pool2d: each output's gradient to its window's first maximum.",
)
define_op(
    "nn.avg_pool2d_grad",
    num_inputs=2,
    attrs={**_POOL2D_ATTRS, "count_include_pad": False},
    attrs_type_key="relay.attrs.AvgPool2DAttrs",
    type_rel=_pool_grad_rel,
    compute=_avg_pool2d_grad_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Gradient of nn.avg_pool2d: each output's gradient shared over its window.",
)


def _pool_grad_args(
    pool_size: Any, strides: Any, dilation: Any, padding: Any, layout: str, out_layout: str
) -> dict[str, Any]:
    return {
        "pool_size": attr_pair(pool_size),
        "strides": attr_pair(strides),
        "dilation": attr_pair(dilation),
        "padding": get_pad_tuple2d(padding),
        "layout": layout,
        "out_layout": out_layout,
    }


def max_pool2d_grad(
    out_grad: Expr,
    data: Expr,
    pool_size: Any = (1, 1),
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
    dilation: Any = (1, 1),
) -> Call:
    """The gradient of ``max_pool2d(data, ...)`` given its output gradient ``out_grad``."""
    args = _pool_grad_args(pool_size, strides, dilation, padding, layout, out_layout)
    return make_call("nn.max_pool2d_grad", [out_grad, data], ceil_mode=bool(ceil_mode), **args)


def avg_pool2d_grad(
    out_grad: Expr,
    data: Expr,
    pool_size: Any = (1, 1),
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    dilation: Any = (1, 1),
) -> Call:
    """The gradient of ``avg_pool2d(data, ...)`` given its output gradient ``out_grad``."""
    args = _pool_grad_args(pool_size, strides, dilation, padding, layout, out_layout)
    return make_call(
        "nn.avg_pool2d_grad",
        [out_grad, data],
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        **args,
    )


# -- nn.conv2d_backward_weight ---------------------------------------------------------------------

_BACKWARD_WEIGHT_ATTRS = {
    "strides": (1, 1),
    "padding": (0, 0, 0, 0),
    "dilation": (1, 1),
    "groups": 1,
    "channels": None,
    "kernel_size": None,
    "grad_layout": "NCHW",
    "data_layout": "NCHW",
    "kernel_layout": "OIHW",
    "out_dtype": "",
}


def _backward_weight_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    grad = tensor_arg(arg_types, 0, "grad")
    data = tensor_arg(arg_types, 1, "data")
    if attrs.kernel_size is None:
        raise TypeRelError("conv2d_backward_weight needs kernel_size=(kh, kw)")
    _, o, _, _ = canonical_shape(grad, attrs.grad_layout, "NCHW", "grad")
    _, c, _, _ = canonical_shape(data, attrs.data_layout, "NCHW", "data")
    groups = attrs.groups
    if groups < 1 or c % groups or o % groups:
        raise TypeRelError(
            f"groups={groups} must divide the {c} input and {o} output channels of "
            f"conv2d_backward_weight"
        )
    if attrs.channels is not None and attrs.channels != o:
        raise TypeRelError(f"channels={attrs.channels} but grad {grad} has {o} channels")
    kh, kw = attrs.kernel_size
    dtype = attrs.out_dtype or data.dtype
    return TensorType((o, c // groups, kh, kw), dtype)


def _backward_weight_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    grad, data = ins
    out_dtype = np.dtype(attrs.out_dtype) if attrs.out_dtype else data.dtype
    acc = acc_dtype(out_dtype)
    dy = to_canonical(grad, attrs.grad_layout, "NCHW").astype(acc, copy=False)
    x = to_canonical(data, attrs.data_layout, "NCHW").astype(acc, copy=False)
    kh, kw = attrs.kernel_size
    pt, pl, pb, pr = pad4(attrs.padding)
    oh, ow = dy.shape[2], dy.shape[3]
    sh, sw = pair(attrs.strides, "strides")
    dh, dw = pair(attrs.dilation, "dilation")
    need_h = (oh - 1) * sh + (kh - 1) * dh + 1
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    xp = np.pad(
        xp, ((0, 0), (0, 0), (0, max(0, need_h - xp.shape[2])), (0, max(0, need_w - xp.shape[3])))
    )
    win = windows(xp, kh, kw, (sh, sw), (dh, dw), (oh, ow))  # N, C, OH, OW, KH, KW
    groups = attrs.groups
    o, c = dy.shape[1], x.shape[1]
    og, cg = o // groups, c // groups
    out = np.empty((o, cg, kh, kw), acc)
    for gi in range(groups):
        dyg = dy[:, gi * og : (gi + 1) * og]
        wing = win[:, gi * cg : (gi + 1) * cg]
        out[gi * og : (gi + 1) * og] = np.einsum("nkpq,ncpqrs->kcrs", dyg, wing)
    return as_out(from_canonical(out, "OIHW", attrs.kernel_layout), out_dtype)


define_op(
    "nn.conv2d_backward_weight",
    num_inputs=2,
    attrs=_BACKWARD_WEIGHT_ATTRS,
    attrs_type_key="relay.attrs.Conv2DAttrs",
    type_rel=_backward_weight_rel,
    compute=_backward_weight_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Gradient of nn.conv2d with respect to its weight.",
)


def conv2d_backward_weight(
    grad: Expr,
    data: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    grad_layout: str = "NCHW",
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_dtype: str = "",
) -> Call:
    """The gradient of ``conv2d(data, weight, ...)`` with respect to ``weight``, given the
    output gradient ``grad``; ``kernel_size`` is the weight's (kh, kw)."""
    if kernel_size is None:
        raise ArgumentError("conv2d_backward_weight needs kernel_size=(kh, kw)")
    return make_call(
        "nn.conv2d_backward_weight",
        [grad, data],
        strides=attr_pair(strides),
        padding=get_pad_tuple2d(padding),
        dilation=attr_pair(dilation),
        groups=int(groups),
        channels=None if channels is None else int(channels),
        kernel_size=attr_pair(kernel_size),
        grad_layout=grad_layout,
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_dtype=out_dtype or "",
    )
