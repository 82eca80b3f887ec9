"""``nn.deformable_conv2d``: convolution whose taps move by learned offsets (DCN v1).

``deformable_conv2d(data, offset, weight)`` is a 2-D convolution where tap
``(ky, kx)`` of output pixel ``(oy, ox)`` reads the input at
``(oy * sh - pad_top + ky * dh + dy, ox * sw - pad_left + kx * dw + dx)``: ``(dy, dx)``
come from ``offset`` (channels ordered ``(deformable_group, ky, kx, [dy, dx])``, one set
per ``deformable_groups`` slice of the input channels) and the input is read by
bilinear interpolation. A sample whose position lies outside the image is 0, and a
corner of a sample that lies outside counts as 0. ``groups`` splits the channels like
a grouped convolution. Layouts: ``NCHW`` data with an ``OIHW`` kernel, or ``NHWC``
with ``HWIO``; the offset has the data's layout.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 4, 8, 8))
>>> off = relay.var("off", shape=(1, 18, 8, 8))
>>> w = relay.var("w", shape=(4, 4, 3, 3))
>>> deformable_conv2d(x, off, w, padding=(1, 1)).attrs.padding
[1, 1, 1, 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.op import default_registry
from relaykit.ir.types import IncompleteType, TensorType, Type
from relaykit.op._relations import FLOAT_DTYPES, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["deformable_conv2d"]

_LAYOUTS = {"NCHW": "OIHW", "NHWC": "HWIO"}


def _pair(value: Any) -> tuple[int, int]:
    vals = (int(value),) if isinstance(value, (int, np.integer)) else tuple(int(v) for v in value)
    return (vals[0], vals[0]) if len(vals) == 1 else (vals[0], vals[1])


def _pad4(value: Any) -> tuple[int, int, int, int]:
    vals = (int(value),) if isinstance(value, (int, np.integer)) else tuple(int(v) for v in value)
    if len(vals) == 1:
        return (vals[0],) * 4
    if len(vals) == 2:
        return vals[0], vals[1], vals[0], vals[1]
    if len(vals) == 4:
        return vals[0], vals[1], vals[2], vals[3]
    raise TypeRelError(f"deformable_conv2d padding must have 1, 2 or 4 values, got {vals}")


def _geometry(data: TensorType, attrs: Attrs) -> tuple[int, int, int, int, int, int, int]:
    """(n, c, h, w, out_h, out_w, out_channels) from the data type and the attributes."""
    if _LAYOUTS.get(attrs.data_layout) != attrs.kernel_layout:
        raise TypeRelError(
            "deformable_conv2d supports data_layout/kernel_layout NCHW/OIHW or NHWC/HWIO, got "
            f"{attrs.data_layout}/{attrs.kernel_layout}"
        )
    if data.ndim != 4:
        raise TypeRelError(f"deformable_conv2d data must be 4-D, got {data}")
    if attrs.kernel_size is None or attrs.channels is None:
        raise TypeRelError("deformable_conv2d needs kernel_size= and channels=")
    if attrs.data_layout == "NCHW":
        n, c, h, w = data.shape
    else:
        n, h, w, c = data.shape
    kh, kw = attrs.kernel_size
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    pt, pl, pb, pr = attrs.padding
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    groups, dgroups = int(attrs.groups), int(attrs.deformable_groups)
    if oh <= 0 or ow <= 0 or c % groups or c % dgroups or int(attrs.channels) % groups:
        raise TypeRelError(
            f"deformable_conv2d: {c} input / {attrs.channels} output channels, groups={groups}, "
            f"deformable_groups={dgroups}, kernel {kh}x{kw} do not fit data {data}"
        )
    return n, c, h, w, oh, ow, int(attrs.channels)


def _expected(data: TensorType, attrs: Attrs) -> tuple[TensorType, TensorType, TensorType]:
    """The offset, weight and output types a call with ``data`` and ``attrs`` has."""
    n, c, _, _, oh, ow, oc = _geometry(data, attrs)
    kh, kw = attrs.kernel_size
    noff = 2 * kh * kw * int(attrs.deformable_groups)
    icg = c // int(attrs.groups)
    dt = data.dtype
    if attrs.data_layout == "NCHW":
        return (
            TensorType((n, noff, oh, ow), dt),
            TensorType((oc, icg, kh, kw), dt),
            TensorType((n, oc, oh, ow), attrs.out_dtype or dt),
        )
    return (
        TensorType((n, oh, ow, noff), dt),
        TensorType((kh, kw, icg, oc), dt),
        TensorType((n, oh, ow, oc), attrs.out_dtype or dt),
    )


def _rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"deformable_conv2d needs float data, got {data}")
    offset_t, weight_t, out_t = _expected(data, attrs)
    offset = tensor_arg(arg_types, 1, "offset")
    weight = tensor_arg(arg_types, 2, "weight")
    if offset.shape != offset_t.shape:
        raise TypeRelError(f"deformable_conv2d offset must be {offset_t}, got {offset}")
    if weight.shape != weight_t.shape:
        raise TypeRelError(f"deformable_conv2d weight must be {weight_t}, got {weight}")
    return out_t


def _solve(arg_types: Sequence[Type], attrs: Attrs) -> list[Type | None]:
    """Offset and weight types of a call whose data type is known (for type inference)."""
    out: list[Type | None] = list(arg_types)
    data = arg_types[0] if arg_types else None
    if not isinstance(data, TensorType):
        return out
    offset_t, weight_t, _ = _expected(data, attrs)
    for i, t in ((1, offset_t), (2, weight_t)):
        if isinstance(out[i], IncompleteType):
            out[i] = t
    return out


def _sample(img: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Bilinear samples of ``img`` (C, H, W) at positions ``ys``/``xs`` (C, ...): 0 for a
    position outside the image, and 0 for each corner outside it."""
    c, h, w = img.shape
    inside = (ys >= 0) & (ys < h) & (xs >= 0) & (xs < w)
    y0, x0 = np.floor(ys).astype(np.int64), np.floor(xs).astype(np.int64)
    fy, fx = ys - y0, xs - x0
    chan = np.arange(c).reshape((c,) + (1,) * (ys.ndim - 1))
    out = np.zeros(ys.shape, dtype=np.float64)
    for yy, wy in ((y0, 1 - fy), (y0 + 1, fy)):
        for xx, wx in ((x0, 1 - fx), (x0 + 1, fx)):
            ok = inside & (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            vals = img[chan, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]
            out += np.where(ok, wy * wx * vals, 0.0)
    return out


def _kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, offset, weight = inputs
    if attrs.data_layout == "NHWC":
        data = data.transpose(0, 3, 1, 2)
        offset = offset.transpose(0, 3, 1, 2)
        weight = weight.transpose(3, 2, 0, 1)  # HWIO -> OIHW
    n, c, _, _ = data.shape
    oc, icg, kh, kw = weight.shape
    oh, ow = offset.shape[2:]
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    pt, pl = attrs.padding[0], attrs.padding[1]
    dg = int(attrs.deformable_groups)
    off = offset.astype(np.float64).reshape(n, dg, kh, kw, 2, oh, ow)
    # base positions (KH, KW, OH, OW)
    by = (np.arange(oh) * sh - pt)[None, None, :, None] + (np.arange(kh) * dh)[:, None, None, None]
    bx = (np.arange(ow) * sw - pl)[None, None, None, :] + (np.arange(kw) * dw)[None, :, None, None]
    group_of = np.arange(c) // (c // dg)  # deformable group of each input channel
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=np.float64)
    for b in range(n):
        ys = by[None] + off[b, group_of, :, :, 0]  # (C, KH, KW, OH, OW)
        xs = bx[None] + off[b, group_of, :, :, 1]
        cols[b] = _sample(data[b].astype(np.float64), ys, xs)
    groups = int(attrs.groups)
    ocg = oc // groups
    w64 = weight.astype(np.float64)
    out = np.concatenate(
        [
            np.einsum(
                "nikluv,oikl->nouv",
                cols[:, g * icg : (g + 1) * icg],
                w64[g * ocg : (g + 1) * ocg],
            )
            for g in range(groups)
        ],
        axis=1,
    )
    if attrs.data_layout == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(out.astype(attrs.out_dtype or inputs[0].dtype))


define_op(
    "nn.deformable_conv2d",
    num_inputs=3,
    attrs={
        "strides": (1, 1),
        "padding": (0, 0, 0, 0),
        "dilation": (1, 1),
        "deformable_groups": 1,
        "groups": 1,
        "channels": None,
        "kernel_size": None,
        "data_layout": "NCHW",
        "kernel_layout": "OIHW",
        "out_layout": "",
        "out_dtype": "",
    },
    attrs_type_key="relay.attrs.DeformableConv2DAttrs",
    type_rel=_rel,
    compute=_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Deformable 2-D convolution (taps displaced by learned offsets).",
)
default_registry.set_attr("nn.deformable_conv2d", "FTypeSolveInputs", _solve)


def deformable_conv2d(
    data: Expr,
    offset: Expr,
    weight: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    deformable_groups: int = 1,
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """Deformable 2-D convolution of ``data`` by ``weight`` with tap ``offset`` s."""
    return make_call(
        "nn.deformable_conv2d",
        [data, offset, weight],
        strides=_pair(strides),
        padding=_pad4(padding),
        dilation=_pair(dilation),
        deformable_groups=int(deformable_groups),
        groups=int(groups),
        channels=None if channels is None else int(channels),
        kernel_size=None if kernel_size is None else _pair(kernel_size),
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_layout=out_layout or "",
        out_dtype=out_dtype or "",
    )
