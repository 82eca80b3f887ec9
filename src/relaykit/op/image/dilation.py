"""Morphology: ``image.dilation2d``.

``dilation2d(data, weight)`` is grey-scale morphological dilation: each output
pixel is the maximum over the kernel window of ``data + weight`` (depthwise: one
kernel per channel), with ``strides``, ``dilations`` and zero ``padding`` as
TVM pads it (``(top, left)`` or ``(top, left, bottom, right)``). Layouts are
``NCHW`` with an ``IHW`` kernel, or ``NHWC`` with an ``HWI`` kernel.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 3, 8, 8))
>>> w = relay.var("w", shape=(3, 2, 2))
>>> dilation2d(x, w).attrs.data_layout
'NCHW'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["dilation2d"]


def _pair(value: Any, what: str) -> tuple[int, int]:
    vals = (
        (int(value),) * 2 if isinstance(value, (int, np.integer)) else tuple(int(v) for v in value)
    )
    if len(vals) == 1:
        vals = vals * 2
    if len(vals) != 2:
        raise TypeRelError(f"dilation2d {what} must have 2 values (height, width), got {vals}")
    return vals[0], vals[1]


def _pads(padding: Any) -> tuple[int, int, int, int]:
    vals = tuple(int(v) for v in padding)
    if len(vals) == 1:
        return (vals[0],) * 4
    if len(vals) == 2:
        return vals[0], vals[1], vals[0], vals[1]
    if len(vals) == 4:
        return vals[0], vals[1], vals[2], vals[3]
    raise TypeRelError(
        f"dilation2d padding must have 1, 2 (top, left) or 4 (top, left, bottom, right) "
        f"values, got {vals}"
    )


_D2D_LAYOUTS = {"NCHW": "IHW", "NHWC": "HWI"}


def _d2d_geometry(
    dshape: Sequence[int], wshape: Sequence[int], attrs: Attrs
) -> tuple[int, int, int, int, int]:
    """(channels, kh, kw, out_h, out_w) of a dilation2d, checking the attributes."""
    if _D2D_LAYOUTS.get(attrs.data_layout) != attrs.kernel_layout:
        raise TypeRelError(
            "dilation2d supports data_layout/kernel_layout NCHW/IHW or NHWC/HWI, got "
            f"{attrs.data_layout}/{attrs.kernel_layout}"
        )
    if attrs.data_layout == "NCHW":
        c, h, w = dshape[1], dshape[2], dshape[3]
        kc, kh, kw = wshape
    else:
        h, w, c = dshape[1], dshape[2], dshape[3]
        kh, kw, kc = wshape
    if kc != c:
        raise TypeRelError(f"dilation2d kernel has {kc} channels, data has {c}")
    sh, sw = _pair(attrs.strides, "strides")
    dh, dw = _pair(attrs.dilations, "dilations")
    pt, pl, pb, pr = _pads(attrs.padding)
    oh = (h + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
    ow = (w + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
    if oh <= 0 or ow <= 0:
        raise TypeRelError(f"dilation2d window is larger than the padded input ({h}x{w})")
    return c, kh, kw, oh, ow


def _dilation2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    weight = tensor_arg(arg_types, 1, "weight")
    if data.ndim != 4 or weight.ndim != 3:
        raise TypeRelError(f"dilation2d needs 4-D data and a 3-D kernel, got {data}, {weight}")
    c, _, _, oh, ow = _d2d_geometry(data.shape, weight.shape, attrs)
    n = data.shape[0]
    shape = (n, c, oh, ow) if attrs.data_layout == "NCHW" else (n, oh, ow, c)
    return TensorType(shape, attrs.out_dtype or data.dtype)


def _dilation2d_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, weight = inputs
    _, kh, kw, oh, ow = _d2d_geometry(data.shape, weight.shape, attrs)
    if attrs.data_layout == "NHWC":  # work in NCHW / IHW
        data = data.transpose(0, 3, 1, 2)
        weight = weight.transpose(2, 0, 1)
    sh, sw = _pair(attrs.strides, "strides")
    dh, dw = _pair(attrs.dilations, "dilations")
    pt, pl, pb, pr = _pads(attrs.padding)
    padded = np.pad(data, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    out = np.full((*data.shape[:2], oh, ow), -np.inf, dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            win = padded[
                :,
                :,
                i * dh : i * dh + (oh - 1) * sh + 1 : sh,
                j * dw : j * dw + (ow - 1) * sw + 1 : sw,
            ]
            np.maximum(out, win + weight[None, :, i, j, None, None], out=out)
    if attrs.data_layout == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(out.astype(attrs.out_dtype or inputs[0].dtype))


define_op(
    "image.dilation2d",
    num_inputs=2,
    attrs={
        "strides": (1, 1),
        "padding": (0, 0),
        "dilations": (1, 1),
        "data_layout": "NCHW",
        "kernel_layout": "IHW",
        "out_dtype": "",
    },
    attrs_type_key="relay.attrs.Dilation2DAttrs",
    type_rel=_dilation2d_rel,
    compute=_dilation2d_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Grey-scale morphological dilation (max of data + kernel over each window).",
)


def dilation2d(
    data: Expr,
    weight: Expr,
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0),
    dilations: Sequence[int] = (1, 1),
    data_layout: str = "NCHW",
    kernel_layout: str = "IHW",
    out_dtype: str = "",
) -> Call:
    """Morphological dilation of ``data`` by the per-channel kernel ``weight``."""
    return make_call(
        "image.dilation2d",
        [data, weight],
        strides=tuple(int(v) for v in strides),
        padding=tuple(int(v) for v in padding),
        dilations=tuple(int(v) for v in dilations),
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_dtype=out_dtype or "",
    )
