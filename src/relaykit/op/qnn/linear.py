"""Quantized ``dense`` and ``batch_matmul`` (TVM's ``relay.qnn.op``): the integer product
of the zero-point-free inputs, accumulated in ``out_dtype`` (int32).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 4), dtype="int8")
>>> w = relay.var("w", shape=(3, 4), dtype="int8")
>>> z, s = relay.const(0), relay.const(0.5)
>>> dense(x, w, z, z, s, s, units=3).attrs.out_dtype
'int32'
"""

from __future__ import annotations

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.op.define import make_call

from ._common import check_scale_const, check_zero_point_const, static_dtype
from ._core import define_core_op

__all__ = ["dense", "batch_matmul"]

define_core_op(
    "qnn.dense",
    "nn.dense",
    lambda attrs, ndim: 0,
    {},
    "relay.attrs.DenseAttrs",
    "Quantized dense: (data - input_zp) @ (weight - kernel_zp).T in int32.",
)


def _batch_axis(attrs: Attrs, ndim: int) -> int:
    return ndim - 2 if attrs.transpose_b else ndim - 1


define_core_op(
    "qnn.batch_matmul",
    "nn.batch_matmul",
    _batch_axis,
    {"transpose_a": False, "transpose_b": True},
    "relay.attrs.BatchMatmulAttrs",
    "Quantized batch_matmul of the zero-point-free inputs in int32.",
)


def check_params(op: str, data: Expr, kernel: Expr, params: tuple[Expr, Expr, Expr, Expr]) -> None:
    """Constant scales positive and finite, constant zero points in their dtype's range."""
    izp, kzp, isc, ksc = params
    check_zero_point_const(izp, static_dtype(data), "input_zero_point", op)
    check_zero_point_const(kzp, static_dtype(kernel), "kernel_zero_point", op)
    check_scale_const(isc, "input_scale", op)
    check_scale_const(ksc, "kernel_scale", op)


def dense(
    data: Expr,
    weight: Expr,
    input_zero_point: Expr,
    kernel_zero_point: Expr,
    input_scale: Expr,
    kernel_scale: Expr,
    units: int | None,
    out_dtype: str = "int32",
) -> Call:
    """TVM's ``relay.qnn.op.dense``."""
    params = (input_zero_point, kernel_zero_point, input_scale, kernel_scale)
    check_params("qnn.dense", data, weight, params)
    return make_call(
        "qnn.dense",
        [data, weight, *params],
        units=None if units is None else int(units),
        out_dtype=str(out_dtype),
    )


def batch_matmul(
    x: Expr,
    y: Expr,
    x_zero_point: Expr,
    y_zero_point: Expr,
    x_scale: Expr,
    y_scale: Expr,
    out_dtype: str = "int32",
    transpose_a: bool = False,
    transpose_b: bool = True,
) -> Call:
    """TVM's ``relay.qnn.op.batch_matmul``."""
    params = (x_zero_point, y_zero_point, x_scale, y_scale)
    check_params("qnn.batch_matmul", x, y, params)
    return make_call(
        "qnn.batch_matmul",
        [x, y, *params],
        out_dtype=str(out_dtype),
        transpose_a=bool(transpose_a),
        transpose_b=bool(transpose_b),
    )
