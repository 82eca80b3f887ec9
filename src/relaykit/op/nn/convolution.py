"""Convolutions: ``nn.conv1d``, ``nn.conv2d``, ``nn.conv3d`` and their transposes
(``nn.conv1d_transpose``, ``nn.conv2d_transpose``, ``nn.conv3d_transpose``), with TVM's
attributes and defaults: each one's schema, type relation, reference kernel, weight
solver and constructor.

``nn.conv2d`` has its own, tuned 2-D kernel: im2col (``sliding_window_view``) and one
batched ``matmul`` over the groups, so BLAS does the work and grouped/depthwise
convolutions need no per-channel Python loop. Data is moved to canonical ``NCHW``/``OIHW``
order first and the result moved to the output layout last.

The 1-D and 3-D type relations and kernels are written once for any number of spatial
axes. Layouts are permutations of ``NCW``/``NCDHW`` for data, ``OIW``/``OIDHW`` for
weights (``IOW``/``IODHW`` for the transposes). Padding is ``(before..., after...)`` per
spatial axis: one value pads every side, one value per axis pads both sides of that axis.
Their kernels move data to channels-first order, take the strided windows
(``sliding_window_view``) and contract them with the weights in one ``einsum`` over the
groups, in float64 (as the 2-D kernels), so they are the reference the backends are
checked against.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 3, 8, 8))
>>> w = relay.var("w", shape=(16, 3, 3, 3))
>>> y = conv2d(x, w, padding=1, channels=16, kernel_size=3)
>>> y.attrs.padding, y.attrs.kernel_size
([1, 1, 1, 1], [3, 3])
>>> import numpy as np
>>> x = np.arange(5, dtype="float32").reshape(1, 1, 5)
>>> w = np.ones((1, 1, 3), "float32")
>>> attrs = conv1d(relay_var((1, 1, 5)), relay_var((1, 1, 3))).attrs
>>> conv_nd_kernel(1, transpose=False)([x, w], attrs).tolist()
[[[3.0, 6.0, 9.0]]]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from relaykit.errors import AttrError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, Var
from relaykit.ir.types import TensorType, Type, check_dtype
from relaykit.op._numeric import as_out
from relaykit.op._relations import differ, resolve_dtype, static, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, default_registry, define_op, make_call

from .conv_weights import conv_weight_solver, depthwise_multiplier, grouped_weight
from .geometry import (
    attr_pair,
    canonical_shape,
    conv_out_size,
    from_canonical,
    get_pad_tuple2d,
    pad4,
    pair,
    to_canonical,
    to_layout,
    windows,
)
from .operands import (
    acc_dtype,
    dtype_attr,
    opt_int,
    result_dtype,
)

__all__ = [
    "conv1d",
    "conv2d",
    "conv3d",
    "conv1d_transpose",
    "conv2d_transpose",
    "conv3d_transpose",
    "conv_nd_kernel",
]


# -- nn.conv2d, nn.conv2d_transpose ---------------------------------------------------------------


_CONV2D_ATTRS = {
    "strides": (1, 1),
    "padding": (0, 0),
    "dilation": (1, 1),
    "groups": 1,
    "channels": None,
    "kernel_size": None,
    "data_layout": "NCHW",
    "kernel_layout": "OIHW",
    "out_layout": "",
    "out_dtype": "",
}

_CONV2D_TRANSPOSE_ATTRS = {
    "channels": None,
    "kernel_size": None,
    "strides": (1, 1),
    "output_padding": (0, 0),
    "padding": (0, 0),
    "dilation": (1, 1),
    "groups": 1,
    "data_layout": "NCHW",
    "kernel_layout": "IOHW",
    "out_layout": "",
    "out_dtype": "",
}


def conv2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    weight = tensor_arg(arg_types, 1, "weight")
    n, c, h, w = canonical_shape(data, attrs.data_layout, "NCHW", "data")
    o, i, kh, kw = canonical_shape(weight, attrs.kernel_layout, "OIHW", "weight")
    groups = attrs.groups
    if not isinstance(groups, int) or groups < 1:
        raise TypeRelError(f"groups must be a positive integer, got {groups!r}")
    m = depthwise_multiplier(c, o, i, groups, attrs.channels)
    if m is not None:  # TVM's depthwise weight (C, M, kh, kw): C*M filters of one channel
        o, i = o * m, 1
    if differ(c, i * groups):
        raise TypeRelError(
            f"data has {c} input channels but the weight {weight} expects {i} per group x "
            f"{groups} groups = {i * groups}"
        )
    if static(o) and o % groups:
        raise TypeRelError(f"the {o} output channels are not divisible by groups={groups}")
    if attrs.channels is not None and differ(attrs.channels, o):
        raise TypeRelError(f"channels={attrs.channels} but the weight {weight} has {o} filters")
    if attrs.kernel_size is not None and tuple(attrs.kernel_size) != (kh, kw):
        raise TypeRelError(
            f"kernel_size={tuple(attrs.kernel_size)} but the weight {weight} has a {kh}x{kw} kernel"
        )
    sh, sw = pair(attrs.strides, "strides")
    dh, dw = pair(attrs.dilation, "dilation")
    pt, pl, pb, pr = pad4(attrs.padding)
    oh = conv_out_size(h, kh, sh, dh, pt, pb, "kernel height")
    ow = conv_out_size(w, kw, sw, dw, pl, pr, "kernel width")
    out_layout = attrs.out_layout or attrs.data_layout
    shape = to_layout((n, o, oh, ow), "NCHW", out_layout)
    return TensorType(shape, resolve_dtype(attrs.out_dtype, data.dtype))


def conv2d_transpose_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    weight = tensor_arg(arg_types, 1, "weight")
    n, c, h, w = canonical_shape(data, attrs.data_layout, "NCHW", "data")
    i, og, kh, kw = canonical_shape(weight, attrs.kernel_layout, "IOHW", "weight")
    groups = attrs.groups
    if not isinstance(groups, int) or groups < 1 or (static(c) and c % groups):
        raise TypeRelError(f"groups={groups!r} must be a positive divisor of the {c} channels")
    if differ(c, i):
        raise TypeRelError(f"data has {c} input channels but the weight {weight} expects {i}")
    o = og * groups
    if attrs.channels is not None and attrs.channels != o:
        raise TypeRelError(f"channels={attrs.channels} but the weight gives {o} output channels")
    if attrs.kernel_size is not None and tuple(attrs.kernel_size) != (kh, kw):
        raise TypeRelError(
            f"kernel_size={tuple(attrs.kernel_size)} but the weight {weight} has a {kh}x{kw} kernel"
        )
    sh, sw = pair(attrs.strides, "strides")
    dh, dw = pair(attrs.dilation, "dilation")
    pt, pl, pb, pr = pad4(attrs.padding)
    # as in TVM, output_padding may exceed the stride: the extra rows and columns are zeros
    oph, opw = pair(attrs.output_padding or 0, "output_padding", minimum=0)
    oh = (h - 1) * sh - pt - pb + dh * (kh - 1) + oph + 1
    ow = (w - 1) * sw - pl - pr + dw * (kw - 1) + opw + 1
    if (static(oh) and oh < 1) or (static(ow) and ow < 1):
        raise TypeRelError(f"the padding {attrs.padding} leaves an empty output ({oh}x{ow})")
    shape = to_layout((n, o, oh, ow), "NCHW", attrs.out_layout or attrs.data_layout)
    return TensorType(shape, resolve_dtype(attrs.out_dtype, data.dtype))


def _grouped_conv(
    x: np.ndarray,
    w: np.ndarray,
    groups: int,
    strides: tuple[int, int],
    dilation: tuple[int, int],
    padding: tuple[int, int, int, int],
    acc: np.dtype,
) -> np.ndarray:
    """NCHW x OIHW -> NCHW grouped convolution by im2col and one batched matmul."""
    n, _c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    pt, pl, pb, pr = padding
    xp = np.pad(x.astype(acc, copy=False), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    (sh, sw), (dh, dw) = strides, dilation
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (wd + pl + pr - (kw - 1) * dw - 1) // sw + 1
    win = windows(xp, kh, kw, strides, dilation, (oh, ow))
    g, og = groups, o // groups
    cols = win.reshape(n, g, cg, oh, ow, kh, kw).transpose(1, 0, 3, 4, 2, 5, 6)
    cols = cols.reshape(g, n * oh * ow, cg * kh * kw)
    wmat = w.astype(acc, copy=False).reshape(g, og, cg * kh * kw).transpose(0, 2, 1)
    out = np.matmul(cols, wmat)  # (G, N*OH*OW, OG)
    return out.reshape(g, n, oh, ow, og).transpose(1, 0, 4, 2, 3).reshape(n, o, oh, ow)


def conv2d_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, weight = inputs
    out_dtype = result_dtype(attrs, data)
    x = to_canonical(data, attrs.data_layout, "NCHW")
    w = to_canonical(weight, attrs.kernel_layout, "OIHW")
    w = grouped_weight(w, x.shape[1], attrs.groups, attrs.channels)
    out = _grouped_conv(
        x,
        w,
        attrs.groups,
        pair(attrs.strides, "strides"),
        pair(attrs.dilation, "dilation"),
        pad4(attrs.padding),
        acc_dtype(out_dtype),
    )
    out = from_canonical(out, "NCHW", attrs.out_layout or attrs.data_layout)
    return as_out(out, out_dtype)


def conv2d_transpose_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    """Transposed convolution: per-group matmul to columns, then col2im over the kernel taps."""
    data, weight = inputs
    out_dtype = result_dtype(attrs, data)
    acc = acc_dtype(out_dtype)
    x = to_canonical(data, attrs.data_layout, "NCHW").astype(acc, copy=False)
    w = to_canonical(weight, attrs.kernel_layout, "IOHW").astype(acc, copy=False)
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    g = attrs.groups
    cg = c // g
    (sh, sw), (dh, dw) = pair(attrs.strides, "strides"), pair(attrs.dilation, "dilation")
    pt, pl, pb, pr = pad4(attrs.padding)
    oph, opw = pair(attrs.output_padding or 0, "output_padding", minimum=0)
    # cols[g, n*h*w, og*kh*kw] = x_g (N*H*W, Cg) @ w_g (Cg, OG*KH*KW)
    xg = x.reshape(n, g, cg, h * wd).transpose(1, 0, 3, 2).reshape(g, n * h * wd, cg)
    wg = w.reshape(g, cg, og * kh * kw)
    cols = np.matmul(xg, wg).reshape(g, n, h, wd, og, kh, kw)
    full_h = (h - 1) * sh + (kh - 1) * dh + 1 + oph
    full_w = (wd - 1) * sw + (kw - 1) * dw + 1 + opw
    buf = np.zeros((g, n, og, full_h, full_w), dtype=acc)
    for i in range(kh):  # loop over kernel taps (not elements): each tap is one strided add
        for j in range(kw):
            tap = cols[:, :, :, :, :, i, j].transpose(0, 1, 4, 2, 3)
            buf[
                :,
                :,
                :,
                i * dh : i * dh + (h - 1) * sh + 1 : sh,
                j * dw : j * dw + (wd - 1) * sw + 1 : sw,
            ] += tap
    oh = full_h - pt - pb
    ow = full_w - pl - pr
    out = buf[:, :, :, pt : pt + oh, pl : pl + ow].transpose(1, 0, 2, 3, 4)
    out = out.reshape(n, g * og, oh, ow)
    out = from_canonical(out, "NCHW", attrs.out_layout or attrs.data_layout)
    return as_out(out, out_dtype)


define_op(
    "nn.conv2d",
    num_inputs=2,
    attrs=_CONV2D_ATTRS,
    attrs_type_key="relay.attrs.Conv2DAttrs",
    type_rel=conv2d_rel,
    compute=conv2d_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="2-D convolution.",
)

default_registry.set_attr(
    "nn.conv2d", "FTypeSolveInputs", conv_weight_solver("nn.conv2d", "NCHW", "OIHW")
)

define_op(
    "nn.conv2d_transpose",
    num_inputs=2,
    attrs=_CONV2D_TRANSPOSE_ATTRS,
    attrs_type_key="relay.attrs.Conv2DTransposeAttrs",
    type_rel=conv2d_transpose_rel,
    compute=conv2d_transpose_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="2-D transposed convolution.",
)

default_registry.set_attr(
    "nn.conv2d_transpose",
    "FTypeSolveInputs",
    conv_weight_solver("nn.conv2d_transpose", "NCHW", "IOHW"),
)


def conv2d(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """2-D convolution; ``padding`` is normalised to (top, left, bottom, right).

    Grouped and depthwise convolutions set ``groups``; the weight then has
    ``in_channels // groups`` input channels (``OIHW``).
    """
    return make_call(
        "nn.conv2d",
        [data, weight],
        strides=attr_pair(strides),
        padding=get_pad_tuple2d(padding),
        dilation=attr_pair(dilation),
        groups=int(groups),
        channels=opt_int(channels),
        kernel_size=attr_pair(kernel_size),
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_layout=out_layout,
        out_dtype=dtype_attr(out_dtype),
    )


def conv2d_transpose(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "IOHW",
    out_layout: str = "",
    output_padding: Any = (0, 0),
    out_dtype: str = "",
) -> Call:
    """2-D transposed convolution; the weight is ``IOHW`` = (in, out // groups, kh, kw)."""
    return make_call(
        "nn.conv2d_transpose",
        [data, weight],
        channels=opt_int(channels),
        kernel_size=attr_pair(kernel_size),
        strides=attr_pair(strides),
        output_padding=attr_pair(output_padding),
        padding=get_pad_tuple2d(padding),
        dilation=attr_pair(dilation),
        groups=int(groups),
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_layout=out_layout,
        out_dtype=dtype_attr(out_dtype),
    )


# -- nn.conv1d, nn.conv3d and their transposes ---------------------------------------------------

_SPATIAL = {1: "W", 3: "DHW"}


def relay_var(shape: Sequence[int], dtype: str = "float32") -> Var:
    """A variable of a tensor type (for examples)."""
    return Var("v", TensorType(tuple(shape), dtype))


def _ntuple(value: Any, n: int, what: str) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    vals = tuple(int(v) for v in value)
    if len(vals) == 1:
        return vals * n
    if len(vals) != n:
        raise AttrError(f"{what} must have 1 or {n} values, got {value!r}")
    return vals


def _nd_padding(value: Any, n: int) -> tuple[int, ...]:
    """(before..., after...) from 1, n or 2n values (TVM's get_pad_tuple1d/3d)."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * (2 * n)
    vals = tuple(int(v) for v in value)
    if len(vals) == 1:
        return vals * (2 * n)
    if len(vals) == n:
        return vals + vals
    if len(vals) != 2 * n:
        raise AttrError(f"padding must have 1, {n} or {2 * n} values, got {value!r}")
    return vals


def _nd_geometry(attrs: Attrs, n: int) -> tuple[tuple[int, ...], ...]:
    strides = _ntuple(attrs.strides, n, "strides")
    dilation = _ntuple(attrs.dilation, n, "dilation")
    padding = _nd_padding(attrs.padding, n)
    if any(s < 1 for s in strides + dilation) or any(p < 0 for p in padding):
        raise TypeRelError(
            f"strides {strides} and dilation {dilation} must be positive and padding "
            f"{padding} non-negative"
        )
    return strides, dilation, padding


def _check_common(
    data: TensorType, weight: TensorType, attrs: Attrs, kernel: tuple[Any, ...], n: int
) -> int:
    groups = attrs.groups
    if not isinstance(groups, int) or groups < 1:
        raise TypeRelError(f"groups must be a positive integer, got {groups!r}")
    if attrs.kernel_size is not None and _ntuple(attrs.kernel_size, n, "kernel_size") != kernel:
        raise TypeRelError(
            f"kernel_size={tuple(attrs.kernel_size)} but the weight {weight} has a "
            f"{'x'.join(map(str, kernel))} kernel"
        )
    return groups


def _conv_rel(n: int) -> Callable[[Sequence[Type], Attrs], Type]:
    data_c, weight_c = "NC" + _SPATIAL[n], "OI" + _SPATIAL[n]

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        weight = tensor_arg(arg_types, 1, "weight")
        batch, c, *size = canonical_shape(data, attrs.data_layout, data_c, "data")
        o, i, *kernel = canonical_shape(weight, attrs.kernel_layout, weight_c, "weight")
        groups = _check_common(data, weight, attrs, tuple(kernel), n)
        m = depthwise_multiplier(c, o, i, groups, attrs.channels)
        if m is not None:  # TVM's depthwise weight (C, M, *K): C*M filters of one channel
            o, i = o * m, 1
        if differ(c, i * groups):
            raise TypeRelError(
                f"data has {c} input channels but the weight {weight} expects {i} per group x "
                f"{groups} groups = {i * groups}"
            )
        if static(o) and o % groups:
            raise TypeRelError(f"the {o} output channels are not divisible by groups={groups}")
        if attrs.channels is not None and differ(attrs.channels, o):
            raise TypeRelError(f"channels={attrs.channels} but the weight {weight} has {o} filters")
        strides, dilation, padding = _nd_geometry(attrs, n)
        out = []
        for ax in range(n):
            eff = (kernel[ax] - 1) * dilation[ax] + 1
            span = size[ax] + padding[ax] + padding[n + ax] - eff
            if static(span) and span < 0:
                raise TypeRelError(
                    f"the kernel window ({eff} with dilation) on spatial axis {ax} is larger "
                    f"than the padded input ({size[ax]} + {padding[ax] + padding[n + ax]})"
                )
            out.append(span // strides[ax] + 1)
        shape = to_layout((batch, o, *out), data_c, attrs.out_layout or attrs.data_layout)
        return TensorType(shape, resolve_dtype(attrs.out_dtype, data.dtype))

    return rel


def _conv_transpose_rel(n: int) -> Callable[[Sequence[Type], Attrs], Type]:
    data_c, weight_c = "NC" + _SPATIAL[n], "IO" + _SPATIAL[n]

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        weight = tensor_arg(arg_types, 1, "weight")
        batch, c, *size = canonical_shape(data, attrs.data_layout, data_c, "data")
        i, og, *kernel = canonical_shape(weight, attrs.kernel_layout, weight_c, "weight")
        groups = _check_common(data, weight, attrs, tuple(kernel), n)
        if static(c) and c % groups:
            raise TypeRelError(f"groups={groups} must divide the {c} input channels")
        if differ(c, i):
            raise TypeRelError(f"data has {c} input channels but the weight {weight} expects {i}")
        o = og * groups
        if attrs.channels is not None and differ(attrs.channels, o):
            raise TypeRelError(
                f"channels={attrs.channels} but the weight gives {o} output channels"
            )
        strides, dilation, padding = _nd_geometry(attrs, n)
        out_pad = _ntuple(attrs.output_padding or 0, n, "output_padding")
        out = []
        for ax in range(n):
            if out_pad[ax] < 0:  # may exceed the stride, as in TVM (zeros at the end)
                raise TypeRelError(f"output_padding {out_pad} must not be negative")
            size_ax = (
                (size[ax] - 1) * strides[ax]
                - padding[ax]
                - padding[n + ax]
                + dilation[ax] * (kernel[ax] - 1)
                + out_pad[ax]
                + 1
            )
            if static(size_ax) and size_ax < 1:
                raise TypeRelError(f"the padding {padding} leaves an empty output")
            out.append(size_ax)
        shape = to_layout((batch, o, *out), data_c, attrs.out_layout or attrs.data_layout)
        return TensorType(shape, resolve_dtype(attrs.out_dtype, data.dtype))

    return rel


def _acc(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.int64) if dtype.kind in "iub" else np.dtype(np.float64)


def _conv_forward(x: np.ndarray, w: np.ndarray, attrs: Attrs, n: int) -> np.ndarray:
    """Channels-first x (N, C, *S) and w (O, C/g, *K), float64 -> (N, O, *OS)."""
    strides, dilation, padding = _nd_geometry(attrs, n)
    batch = x.shape[0]
    o, cg, *kernel = w.shape
    g = attrs.groups
    pads = ((0, 0), (0, 0), *((padding[a], padding[n + a]) for a in range(n)))
    xp = np.pad(x, pads)
    eff = tuple((kernel[a] - 1) * dilation[a] + 1 for a in range(n))
    win = sliding_window_view(xp, eff, axis=tuple(range(2, 2 + n)))
    idx = (
        slice(None),
        slice(None),
        *(slice(None, None, s) for s in strides),
        *(slice(None, None, d) for d in dilation),
    )
    win = win[idx]  # (N, C, *OS, *K)
    out_sizes = win.shape[2 : 2 + n]
    win = win.reshape(batch, g, cg, *out_sizes, *kernel)
    wg = w.reshape(g, o // g, cg, *kernel)
    sp, kk = "pqr"[:n], "ijk"[:n]
    out = np.einsum(f"zgc{sp}{kk},goc{kk}->zgo{sp}", win, wg, optimize=True)
    return out.reshape(batch, o, *out_sizes)


def _conv_backward(x: np.ndarray, w: np.ndarray, attrs: Attrs, n: int) -> np.ndarray:
    """Transposed convolution: channels-first x (N, C, *S), w (C, O/g, *K)."""
    strides, dilation, padding = _nd_geometry(attrs, n)
    out_pad = _ntuple(attrs.output_padding or 0, n, "output_padding")
    batch, c, *size = x.shape
    _, og, *kernel = w.shape
    g = attrs.groups
    cg = c // g
    xg = x.reshape(batch, g, cg, *size)
    wg = w.reshape(g, cg, og, *kernel)
    full = [
        (size[a] - 1) * strides[a] + (kernel[a] - 1) * dilation[a] + 1 + out_pad[a]
        for a in range(n)
    ]
    buf = np.zeros((batch, g, og, *full), dtype=x.dtype)
    letters = "pqr"[:n]
    lead: tuple[Any, ...] = (slice(None), slice(None), slice(None))
    for tap in itertools.product(*(range(k) for k in kernel)):  # one strided add per kernel tap
        wt = wg[lead + tuple(tap)]  # (G, Cg, OG)
        contrib = np.einsum(f"zgc{letters},gco->zgo{letters}", xg, wt, optimize=True)
        dst = tuple(
            slice(
                tap[a] * dilation[a],
                tap[a] * dilation[a] + (size[a] - 1) * strides[a] + 1,
                strides[a],
            )
            for a in range(n)
        )
        buf[lead + dst] += contrib
    crop = tuple(slice(padding[a], full[a] - padding[n + a]) for a in range(n))
    out = buf[lead + crop]
    return out.reshape(batch, g * og, *out.shape[3:])


def conv_nd_kernel(n: int, transpose: bool) -> Callable[[Sequence[np.ndarray], Attrs], np.ndarray]:
    """The NumPy kernel of the ``n``-D (transposed) convolution."""
    data_c = "NC" + _SPATIAL[n]
    weight_c = ("IO" if transpose else "OI") + _SPATIAL[n]

    def kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        data, weight = inputs
        out_dtype = result_dtype(attrs, data)
        acc = _acc(out_dtype)
        x = to_canonical(data, attrs.data_layout, data_c).astype(acc, copy=False)
        w = to_canonical(weight, attrs.kernel_layout, weight_c).astype(acc, copy=False)
        if not transpose:
            w = grouped_weight(w, x.shape[1], attrs.groups, attrs.channels)
        out = _conv_backward(x, w, attrs, n) if transpose else _conv_forward(x, w, attrs, n)
        out = from_canonical(out, data_c, attrs.out_layout or attrs.data_layout)
        return as_out(out, out_dtype)

    return kernel


def _conv_attrs(n: int) -> dict[str, Any]:
    return {
        "strides": (1,) * n,
        "padding": (0,) * n,
        "dilation": (1,) * n,
        "groups": 1,
        "channels": None,
        "kernel_size": None,
        "data_layout": "NC" + _SPATIAL[n],
        "kernel_layout": "OI" + _SPATIAL[n],
        "out_layout": "",
        "out_dtype": "",
    }


def _conv_transpose_attrs(n: int) -> dict[str, Any]:
    return {
        "channels": None,
        "kernel_size": None,
        "strides": (1,) * n,
        "output_padding": (0,) * n,
        "padding": (0,) * n,
        "dilation": (1,) * n,
        "groups": 1,
        "data_layout": "NC" + _SPATIAL[n],
        "kernel_layout": "IO" + _SPATIAL[n],
        "out_layout": "",
        "out_dtype": "",
    }


for _n in (1, 3):
    define_op(
        f"nn.conv{_n}d",
        num_inputs=2,
        attrs=_conv_attrs(_n),
        attrs_type_key=f"relay.attrs.Conv{_n}DAttrs",
        type_rel=_conv_rel(_n),
        compute=conv_nd_kernel(_n, transpose=False),
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        doc=f"{_n}-D convolution.",
    )
    default_registry.set_attr(
        f"nn.conv{_n}d",
        "FTypeSolveInputs",
        conv_weight_solver(f"nn.conv{_n}d", "NC" + _SPATIAL[_n], "OI" + _SPATIAL[_n]),
    )
    define_op(
        f"nn.conv{_n}d_transpose",
        num_inputs=2,
        attrs=_conv_transpose_attrs(_n),
        attrs_type_key=f"relay.attrs.Conv{_n}DTransposeAttrs",
        type_rel=_conv_transpose_rel(_n),
        compute=conv_nd_kernel(_n, transpose=True),
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        doc=f"{_n}-D transposed convolution.",
    )
    default_registry.set_attr(
        f"nn.conv{_n}d_transpose",
        "FTypeSolveInputs",
        conv_weight_solver(f"nn.conv{_n}d_transpose", "NC" + _SPATIAL[_n], "IO" + _SPATIAL[_n]),
    )


def _opt_tuple(value: Any, n: int) -> tuple[int, ...] | None:
    return None if value is None else _ntuple(value, n, "kernel_size")


def _make_conv(name: str, n: int, data: Expr, weight: Expr, **kw: Any) -> Call:
    kw["strides"] = _ntuple(kw["strides"], n, "strides")
    kw["dilation"] = _ntuple(kw["dilation"], n, "dilation")
    kw["padding"] = _nd_padding(kw["padding"], n)
    kw["kernel_size"] = _opt_tuple(kw["kernel_size"], n)
    kw["channels"] = None if kw["channels"] is None else int(kw["channels"])
    kw["groups"] = int(kw["groups"])
    kw["out_dtype"] = check_dtype(kw["out_dtype"]) if kw["out_dtype"] else ""
    if "output_padding" in kw:
        kw["output_padding"] = _ntuple(kw["output_padding"], n, "output_padding")
    return make_call(name, [data, weight], **kw)


def conv1d(
    data: Expr,
    weight: Expr,
    strides: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCW",
    kernel_layout: str = "OIW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """1-D convolution; ``padding`` is normalised to (left, right)."""
    return _make_conv(
        "nn.conv1d", 1, data, weight, strides=strides, padding=padding, dilation=dilation,
        groups=groups, channels=channels, kernel_size=kernel_size, data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype,
    )  # fmt: skip


def conv3d(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1, 1),
    padding: Any = (0, 0, 0),
    dilation: Any = (1, 1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCDHW",
    kernel_layout: str = "OIDHW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """3-D convolution; ``padding`` is normalised to (front, top, left, back, bottom, right)."""
    return _make_conv(
        "nn.conv3d", 3, data, weight, strides=strides, padding=padding, dilation=dilation,
        groups=groups, channels=channels, kernel_size=kernel_size, data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype,
    )  # fmt: skip


def conv1d_transpose(
    data: Expr,
    weight: Expr,
    strides: Any = (1,),
    padding: Any = (0,),
    dilation: Any = (1,),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCW",
    kernel_layout: str = "IOW",
    out_layout: str = "",
    output_padding: Any = (0,),
    out_dtype: str = "",
) -> Call:
    """1-D transposed convolution (the gradient of :func:`conv1d` with respect to its data)."""
    return _make_conv(
        "nn.conv1d_transpose", 1, data, weight, strides=strides, padding=padding,
        dilation=dilation, groups=groups, channels=channels, kernel_size=kernel_size,
        data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
        output_padding=output_padding, out_dtype=out_dtype,
    )  # fmt: skip


def conv3d_transpose(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1, 1),
    padding: Any = (0, 0, 0),
    dilation: Any = (1, 1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCDHW",
    kernel_layout: str = "IODHW",
    out_layout: str = "",
    output_padding: Any = (0, 0, 0),
    out_dtype: str = "",
) -> Call:
    """3-D transposed convolution (the gradient of :func:`conv3d` with respect to its data)."""
    return _make_conv(
        "nn.conv3d_transpose", 3, data, weight, strides=strides, padding=padding,
        dilation=dilation, groups=groups, channels=channels, kernel_size=kernel_size,
        data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
        output_padding=output_padding, out_dtype=out_dtype,
    )  # fmt: skip
