"""Quantized pooling (TVM's ``relay.qnn.op.avg_pool2d``): dequantize, float32
``nn.avg_pool2d``, quantize to the input's dtype with the output's parameters, as TVM's
lowering computes it.

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 1, 2, 2), dtype="uint8")
>>> s, z = relay.const(0.5), relay.const(0)
>>> y = avg_pool2d(x, s, z, s, z, (2, 2), (1, 1), (0, 0), (1, 1), layout="NCHW")
>>> y.op.name
'qnn.avg_pool2d'
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.expr import Call, Expr
from relaykit.op.define import make_call

from ._common import check_scale_const, check_zero_point_const, static_dtype
from ._emulate import define_emulated_op

__all__ = ["avg_pool2d"]

define_emulated_op(
    "qnn.avg_pool2d",
    "nn.avg_pool2d",
    "relay.attrs.AvgPool2DAttrs",
    "Quantized 2-D average pooling: dequantize, float32 avg_pool2d, quantize.",
    __name__,
)


def avg_pool2d(
    data: Expr,
    input_scale: Expr,
    input_zero_point: Expr,
    output_scale: Expr,
    output_zero_point: Expr,
    pool_size: Any,
    strides: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    layout: str = "NHWC",
    out_layout: str = "",
) -> Call:
    """TVM's ``relay.qnn.op.avg_pool2d`` (note TVM's default layout, ``NHWC``)."""
    op = "qnn.avg_pool2d"
    dtype = static_dtype(data)
    check_scale_const(input_scale, "input_scale", op)
    check_scale_const(output_scale, "output_scale", op)
    check_zero_point_const(input_zero_point, dtype, "input_zero_point", op)
    check_zero_point_const(output_zero_point, dtype, "output_zero_point", op)
    return make_call(
        op,
        [data, input_scale, input_zero_point, output_scale, output_zero_point],
        pool_size=_pair(pool_size),
        strides=_pair(strides),
        padding=tuple(int(p) for p in padding),
        dilation=_pair(dilation),
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        layout=str(layout),
        out_layout=str(out_layout),
    )


def _pair(v: Any) -> tuple[int, ...]:
    if isinstance(v, int):
        return (v, v)
    return tuple(int(x) for x in v)
