"""Quantized ``conv2d`` and ``conv2d_transpose`` (TVM's ``relay.qnn.op``): the
convolution of the zero-point-free inputs in ``out_dtype`` (int32); a per-channel
kernel zero point or scale runs along the kernel layout's ``O`` axis. Padding pads
with the input zero point (a zero after the shift), as TVM does.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 3, 4, 4), dtype="uint8")
>>> w = relay.var("w", shape=(2, 3, 3, 3), dtype="uint8")
>>> z, s = relay.const(0), relay.const(0.5)
>>> conv2d(x, w, z, z, s, s, kernel_size=(3, 3), channels=2).op.name
'qnn.conv2d'
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.op.define import make_call
from relaykit.op.nn.geometry import attr_pair, get_pad_tuple2d
from relaykit.op.nn.operands import opt_int

from ._core import define_core_op
from .linear import check_params

__all__ = ["conv2d", "conv2d_transpose"]


def _out_axis(attrs: Attrs, ndim: int) -> int:
    return str(attrs.kernel_layout).index("O")


define_core_op(
    "qnn.conv2d",
    "nn.conv2d",
    _out_axis,
    {},
    "relay.attrs.Conv2DAttrs",
    "Quantized 2-D convolution of the zero-point-free inputs in int32.",
)


def conv2d(
    data: Expr,
    kernel: Expr,
    input_zero_point: Expr,
    kernel_zero_point: Expr,
    input_scale: Expr,
    kernel_scale: Expr,
    kernel_size: Any,
    channels: int | None,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str = "",
    out_dtype: str = "int32",
) -> Call:
    """TVM's ``relay.qnn.op.conv2d``."""
    params = (input_zero_point, kernel_zero_point, input_scale, kernel_scale)
    check_params("qnn.conv2d", data, kernel, params)
    return make_call(
        "qnn.conv2d",
        [data, kernel, *params],
        strides=attr_pair(strides),
        padding=get_pad_tuple2d(padding),
        dilation=attr_pair(dilation),
        groups=int(groups),
        channels=opt_int(channels),
        kernel_size=attr_pair(kernel_size),
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_layout=out_layout,
        out_dtype=str(out_dtype),
    )


define_core_op(
    "qnn.conv2d_transpose",
    "nn.conv2d_transpose",
    _out_axis,
    {},
    "relay.attrs.Conv2DTransposeAttrs",
    "Quantized 2-D transposed convolution of the zero-point-free inputs in int32.",
)


def conv2d_transpose(
    data: Expr,
    weight: Expr,
    input_zero_point: Expr,
    kernel_zero_point: Expr,
    input_scale: Expr,
    kernel_scale: Expr,
    kernel_size: Any,
    channels: int | None,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    data_layout: str = "NCHW",
    kernel_layout: str = "IOHW",
    out_layout: str = "",
    output_padding: Any = (0, 0),
    out_dtype: str = "int32",
) -> Call:
    """TVM's ``relay.qnn.op.conv2d_transpose``."""
    params = (input_zero_point, kernel_zero_point, input_scale, kernel_scale)
    check_params("qnn.conv2d_transpose", data, weight, params)
    return make_call(
        "qnn.conv2d_transpose",
        [data, weight, *params],
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
        out_dtype=str(out_dtype),
    )
