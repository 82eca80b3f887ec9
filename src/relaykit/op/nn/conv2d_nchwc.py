"""``nn.contrib_conv2d_NCHWc``: 2-D convolution in blocked layouts, the form TVM's x86
schedules use: data ``NCHW{c}c`` (channels split into blocks of ``c``, the block last),
kernel ``OIHW{i}i{o}o``, output ``NCHW{oc}c``. Any other kernel layout on the primal axes
``OIHW`` (``OIHW4o``, as TVM's ConvertLayout writes) is accepted too, the output then in
the data layout.

The kernel unblocks data and weights to ``NCHW`` / ``OIHW``, runs ``nn.conv2d``'s and
blocks the result again; ``channels`` and ``kernel_size`` are checked against the weight.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 2, 5, 5, 4))      # 8 channels in blocks of 4
>>> w = relay.var("w", shape=(4, 2, 3, 3, 4, 2))   # 8 outputs in blocks of 2
>>> y = contrib_conv2d_nchwc(x, w, padding=(1, 1), channels=8, kernel_size=(3, 3),
...                          data_layout="NCHW4c", kernel_layout="OIHW4i2o", out_layout="NCHW2c")
>>> mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([x, w], y)))
>>> str(mod["main"].ret_type)
'Tensor[(1, 4, 5, 5, 2), float32]'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.op import default_registry
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import static, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_attrs, make_call

from .convolution import conv2d_kernel, conv2d_rel
from .geometry import conv_out_size, get_pad_tuple2d, pad4, pair

__all__ = ["contrib_conv2d_nchwc"]


def _block(layout: str, pattern: str, what: str) -> tuple[int, ...]:
    """The block sizes of ``layout`` matched against ``pattern`` (e.g. ``NCHW(\\d+)c``)."""
    m = re.fullmatch(pattern, str(layout))
    if m is None:
        form = pattern.replace(r"(\d+)", "<n>")
        raise TypeRelError(f"{what} {layout!r} is not of the form {form}")
    return tuple(int(g) for g in m.groups())


def _general_kernel_layout(attrs: Attrs) -> bool:
    """A kernel layout other than ``OIHW{i}i{o}o`` (``OIHW4o``, ``OIHW``...): the
    convolution is then nn.conv2d's in these layouts, the output in ``data_layout``."""
    return re.fullmatch(r"OIHW(\d+)i(\d+)o", str(attrs.kernel_layout)) is None


def _as_conv2d(attrs: Attrs) -> Attrs:
    given = dict(attrs)
    given["out_layout"] = attrs.out_layout or attrs.data_layout
    return make_attrs(default_registry.get("nn.conv2d"), given)


def _nchwc_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    weight = tensor_arg(arg_types, 1, "weight")
    (ic,) = _block(attrs.data_layout, r"NCHW(\d+)c", "data_layout")
    if _general_kernel_layout(attrs):
        return conv2d_rel(arg_types, _as_conv2d(attrs))
    bi, bo = _block(attrs.kernel_layout, r"OIHW(\d+)i(\d+)o", "kernel_layout")
    (oc,) = _block(attrs.out_layout or f"NCHW{bo}c", r"NCHW(\d+)c", "out_layout")
    if data.ndim != 5 or weight.ndim != 6:
        raise TypeRelError(f"expected 5-D data and a 6-D weight, got {data} and {weight}")
    n, c_outer, h, w, c_inner = data.shape
    o_outer, i_outer, kh, kw, w_i, w_o = weight.shape
    if (static(c_inner) and c_inner != ic) or w_i != bi or w_o != bo:
        raise TypeRelError(
            f"the shapes {data} and {weight} do not match the layouts "
            f"{attrs.data_layout} / {attrs.kernel_layout}"
        )
    if static(c_outer) and c_outer * ic != i_outer * bi:
        raise TypeRelError(
            f"data has {c_outer * ic} channels but the weight expects {i_outer * bi}"
        )
    out_channels = o_outer * bo
    if attrs.channels is not None and int(attrs.channels) != out_channels:
        raise TypeRelError(f"channels={attrs.channels} but the weight has {out_channels} filters")
    if attrs.kernel_size is not None and tuple(int(k) for k in attrs.kernel_size) != (kh, kw):
        raise TypeRelError(f"kernel_size={tuple(attrs.kernel_size)} but the weight is {kh}x{kw}")
    if out_channels % oc:
        raise TypeRelError(f"{out_channels} output channels do not split into blocks of {oc}")
    sh, sw = pair(attrs.strides, "strides")
    dh, dw = pair(attrs.dilation, "dilation")
    pt, pl, pb, pr = pad4(attrs.padding)
    oh = conv_out_size(h, kh, sh, dh, pt, pb, "kernel height")
    ow = conv_out_size(w, kw, sw, dw, pl, pr, "kernel width")
    return TensorType((n, out_channels // oc, oh, ow, oc), attrs.out_dtype or data.dtype)


def _nchwc_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    if _general_kernel_layout(attrs):
        return conv2d_kernel(inputs, _as_conv2d(attrs))
    data, weight = inputs
    n, c_outer, h, w, ic = data.shape
    o_outer, i_outer, kh, kw, bi, bo = weight.shape
    (oc,) = _block(attrs.out_layout or f"NCHW{bo}c", r"NCHW(\d+)c", "out_layout")
    x = data.transpose(0, 1, 4, 2, 3).reshape(n, c_outer * ic, h, w)
    k = weight.transpose(0, 5, 1, 4, 2, 3).reshape(o_outer * bo, i_outer * bi, kh, kw)
    plain = {
        "strides": attrs.strides,
        "padding": attrs.padding,
        "dilation": attrs.dilation,
        "groups": 1,
        "data_layout": "NCHW",
        "kernel_layout": "OIHW",
        "out_layout": "",
        "out_dtype": attrs.out_dtype,
    }
    out = conv2d_kernel([x, k], make_attrs(default_registry.get("nn.conv2d"), plain))
    on, oo, oh, ow = out.shape
    return np.ascontiguousarray(out.reshape(on, oo // oc, oc, oh, ow).transpose(0, 1, 3, 4, 2))


define_op(
    "nn.contrib_conv2d_NCHWc",
    num_inputs=2,
    attrs={
        "strides": (1, 1),
        "padding": (0, 0, 0, 0),
        "dilation": (1, 1),
        "groups": 1,
        "channels": None,
        "kernel_size": None,
        "data_layout": "NCHW8c",
        "kernel_layout": "OIHW8i8o",
        "out_layout": "",
        "out_dtype": "",
    },
    attrs_type_key="relay.attrs.Conv2DAttrs",
    type_rel=_nchwc_rel,
    compute=_nchwc_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="2-D convolution of NCHW{c}c data with an OIHW{i}i{o}o kernel.",
)


def contrib_conv2d_nchwc(
    data: Expr,
    kernel: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCHW8c",
    kernel_layout: str = "OIHW8i8o",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """2-D convolution in blocked layouts (see the module doc); ``groups`` must be 1."""
    if int(groups) != 1:
        raise TypeRelError("contrib_conv2d_nchwc supports groups=1 only")
    return make_call(
        "nn.contrib_conv2d_NCHWc",
        [data, kernel],
        strides=tuple(int(s) for s in pair(strides, "strides")),
        padding=get_pad_tuple2d(padding),
        dilation=tuple(int(d) for d in pair(dilation, "dilation")),
        groups=1,
        channels=None if channels is None else int(channels),
        kernel_size=None if kernel_size is None else tuple(int(k) for k in kernel_size),
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_layout=out_layout,
        out_dtype=out_dtype,
    )
