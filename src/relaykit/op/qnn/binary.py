"""Quantized elementwise ``add``, ``subtract`` and ``mul`` (TVM's ``relay.qnn.op``).

Each takes ``lhs, rhs`` with their scales and zero points and the output's, and
computes as TVM's lowering does: for add/subtract, both sides requantized to the output
parameters in int32, combined, the output zero point corrected, clipped to the input
dtype; for mul, the zero-point-free product in int32 requantized from scale
``lhs_scale * rhs_scale``.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(4,), dtype="uint8")
>>> s, z = relay.const(0.5), relay.const(127)
>>> add(x, x, s, z, s, z, s, z).op.name
'qnn.add'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import broadcast_shape, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

from ._common import (
    QUANT_DTYPES,
    channel_shape,
    check_qparam_type,
    check_scale_const,
    check_zero_point_const,
    qrange,
    requantize_values,
    runtime_qparams,
    static_dtype,
)

__all__ = ["add", "subtract", "mul", "requantize_or_upcast", "BINARY_OPS"]

_PARAMS = (
    ("lhs_scale", "float32"),
    ("lhs_zero_point", "int32"),
    ("rhs_scale", "float32"),
    ("rhs_zero_point", "int32"),
    ("output_scale", "float32"),
    ("output_zero_point", "int32"),
)


def _make_rel(op: str) -> Callable[[Sequence[Type], Attrs], Type]:
    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        lhs = tensor_arg(arg_types, 0, "lhs")
        rhs = tensor_arg(arg_types, 1, "rhs")
        if lhs.dtype != rhs.dtype or lhs.dtype not in QUANT_DTYPES:
            raise TypeRelError(
                f"{op} takes lhs and rhs of one quantized dtype {QUANT_DTYPES}, got "
                f"{lhs.dtype} and {rhs.dtype}"
            )
        out_shape = broadcast_shape(lhs.shape, rhs.shape)
        shapes = (lhs.shape, lhs.shape, rhs.shape, rhs.shape, out_shape, out_shape)
        axes = (attrs.lhs_axis, attrs.lhs_axis, attrs.rhs_axis, attrs.rhs_axis, -1, -1)
        rows = zip(_PARAMS, shapes, axes, strict=True)
        for k, ((what, dtype), shape, axis) in enumerate(rows, start=2):
            if len(shape) == 0:
                shape = (1,)
            check_qparam_type(arg_types[k], dtype, what, op, shape, int(axis))
        return TensorType(out_shape, lhs.dtype)

    return rel


def requantize_or_upcast(
    x: np.ndarray, s: np.ndarray, z: np.ndarray, os: np.ndarray, oz: np.ndarray, axis: int
) -> np.ndarray:
    """``x`` moved to the output parameters in int32 (only cast when they are the same)."""
    if np.array_equal(s, os) and np.array_equal(z, oz):
        return np.asarray(x).astype(np.int32)
    return requantize_values(x, s, z, os, oz, axis, "UPWARD", "int64", "int32")


def _check(op: str, ins: Sequence[np.ndarray]) -> None:
    dtype = str(ins[0].dtype)
    runtime_qparams(
        op,
        [(_PARAMS[k][0], ins[2 + k]) for k in (0, 2, 4)],
        [(_PARAMS[k][0], ins[2 + k], dtype) for k in (1, 3, 5)],
    )


def _to_dtype(v: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    lo, hi = qrange(str(dtype))
    return np.asarray(np.clip(v, lo, hi).astype(dtype))


def _add_sub(op: str, sign: int) -> Callable[[Sequence[Any], Attrs], np.ndarray]:
    def kernel(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
        ins = [np.asarray(a) for a in inputs]
        _check(op, ins)
        lhs, rhs, ls, lz, rs, rz, os, oz = ins
        a = requantize_or_upcast(lhs, ls, lz, os, oz, int(attrs.lhs_axis)).astype(np.int64)
        b = requantize_or_upcast(rhs, rs, rz, os, oz, int(attrs.rhs_axis)).astype(np.int64)
        zp = np.int64(oz.reshape(-1)[0])
        v = (
            (a + b).astype(np.int32).astype(np.int64) - zp
            if sign > 0
            else (a - b).astype(np.int32).astype(np.int64) + zp
        )
        return _to_dtype(v.astype(np.int32), lhs.dtype)

    return kernel


def _mul_scale(ls: np.ndarray, rs: np.ndarray) -> np.ndarray:
    return (np.asarray(ls, np.float32).reshape(-1) * np.asarray(rs, np.float32).reshape(-1)).astype(
        np.float32
    )


def mul_axis(ls: np.ndarray, rs: np.ndarray, attrs: Attrs) -> int:
    """The axis the product scale of ``qnn.mul`` runs along (-1 when per tensor)."""
    if np.asarray(ls).size > 1:
        return int(attrs.lhs_axis)
    if np.asarray(rs).size > 1:
        return int(attrs.rhs_axis)
    return -1


def _mul(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
    ins = [np.asarray(a) for a in inputs]
    _check("qnn.mul", ins)
    lhs, rhs, ls, lz, rs, rz, os, oz = ins
    a = lhs.astype(np.int64) - channel_shape(lz, max(lhs.ndim, 1), int(attrs.lhs_axis))
    b = rhs.astype(np.int64) - channel_shape(rz, max(rhs.ndim, 1), int(attrs.rhs_axis))
    prod = (a.astype(np.int32).astype(np.int64) * b.astype(np.int32)).astype(np.int32)
    scale = _mul_scale(ls, rs)
    return requantize_values(
        prod, scale, np.int32(0), os, oz, mul_axis(ls, rs, attrs), "UPWARD", "int64",
        str(lhs.dtype),
    )  # fmt: skip


BINARY_OPS = {
    "qnn.add": _add_sub("qnn.add", 1),
    "qnn.subtract": _add_sub("qnn.subtract", -1),
    "qnn.mul": _mul,
}

for _name, _kernel in BINARY_OPS.items():
    define_op(
        _name,
        num_inputs=8,
        attrs={"lhs_axis": -1, "rhs_axis": -1},
        attrs_type_key="relay.attrs.BroadcastAttrs",
        type_rel=_make_rel(_name),
        compute=_kernel,
        pattern=OpPattern.BROADCAST,
        doc=f"Quantized elementwise {_name[4:]} with requantization to the output parameters.",
    )


def _binary(
    op: str,
    lhs: Expr,
    rhs: Expr,
    params: Sequence[Expr],
    lhs_axis: int,
    rhs_axis: int,
) -> Call:
    dtype = static_dtype(lhs) or static_dtype(rhs)
    for (what, _), p in zip(_PARAMS, params, strict=True):
        if what.endswith("scale"):
            check_scale_const(p, what, op)
        else:
            check_zero_point_const(p, dtype, what, op)
    return make_call(op, [lhs, rhs, *params], lhs_axis=int(lhs_axis), rhs_axis=int(rhs_axis))


def add(
    lhs: Expr,
    rhs: Expr,
    lhs_scale: Expr,
    lhs_zero_point: Expr,
    rhs_scale: Expr,
    rhs_zero_point: Expr,
    output_scale: Expr,
    output_zero_point: Expr,
    lhs_axis: int = -1,
    rhs_axis: int = -1,
) -> Call:
    """TVM's ``relay.qnn.op.add``."""
    params = (lhs_scale, lhs_zero_point, rhs_scale, rhs_zero_point, output_scale, output_zero_point)
    return _binary("qnn.add", lhs, rhs, params, lhs_axis, rhs_axis)


def subtract(
    lhs: Expr,
    rhs: Expr,
    lhs_scale: Expr,
    lhs_zero_point: Expr,
    rhs_scale: Expr,
    rhs_zero_point: Expr,
    output_scale: Expr,
    output_zero_point: Expr,
    lhs_axis: int = -1,
    rhs_axis: int = -1,
) -> Call:
    """TVM's ``relay.qnn.op.subtract``."""
    params = (lhs_scale, lhs_zero_point, rhs_scale, rhs_zero_point, output_scale, output_zero_point)
    return _binary("qnn.subtract", lhs, rhs, params, lhs_axis, rhs_axis)


def mul(
    lhs: Expr,
    rhs: Expr,
    lhs_scale: Expr,
    lhs_zero_point: Expr,
    rhs_scale: Expr,
    rhs_zero_point: Expr,
    output_scale: Expr,
    output_zero_point: Expr,
    lhs_axis: int = -1,
    rhs_axis: int = -1,
) -> Call:
    """TVM's ``relay.qnn.op.mul``."""
    params = (lhs_scale, lhs_zero_point, rhs_scale, rhs_zero_point, output_scale, output_zero_point)
    return _binary("qnn.mul", lhs, rhs, params, lhs_axis, rhs_axis)
