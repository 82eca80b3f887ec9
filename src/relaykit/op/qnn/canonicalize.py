"""Each QNN operator's ``FTVMQnnCanonicalize`` hook: its lowering to plain integer Relay
(``cast``, zero-point subtraction, ``nn.dense`` / ``nn.conv2d`` / ``nn.batch_matmul`` in
int32, the Q31 fixed-point multiply written as int64 ``multiply``, ``add`` and
``right_shift``), computing the same integers as the operator's kernel, bit for bit.

A hook gets ``(attrs, args, types)`` (the argument types followed by the output type),
as TVM's do, and is run by ``relay.qnn.transform.CanonicalizeOps``. Scales and zero
points must be constants here (the multipliers are computed from them): anything else
raises :class:`~relaykit.errors.IRError` naming the operator and the argument.

>>> from relaykit.ir.op import default_registry
>>> callable(default_registry.get_attr("qnn.requantize", "FTVMQnnCanonicalize"))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import IRError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, Tuple, TupleGetItem, const
from relaykit.ir.op import default_registry, register_op_attr
from relaykit.ir.types import TensorType, TupleType
from relaykit.op.define import make_call

from . import activation as activation
from . import convolution as convolution
from . import dense_pack as dense_pack
from . import linear as linear
from . import pooling as pooling
from . import transform as transform
from ._common import (
    _check_scale_values,
    _check_zp_values,
    _fixed_points,
    channel_shape,
    const_array,
    qrange,
)
from ._core import core_attrs
from ._emulate import float_attrs
from .binary import _mul_scale, mul_axis
from .quantize import resolve_compute_dtype, resolve_rounding
from .unary import FLOAT_FUNCS

__all__ = [
    "requantize_expr",
    "fixed_point_expr",
    "quantize_expr",
    "dequantize_expr",
    "rint_expr",
    "CANONICALIZE",
]


def _c(value: Any, dtype: str) -> Expr:
    return const(np.asarray(value).astype(dtype), dtype)


def _scale(expr: Expr, what: str, op: str) -> np.ndarray:
    v = const_array(expr, what, op)
    _check_scale_values(v, what, op, IRError)
    return v


def _zp(expr: Expr, dtype: str, what: str, op: str) -> np.ndarray:
    v = const_array(expr, what, op)
    _check_zp_values(v, dtype, what, op, IRError)
    return v


def _clip_cast(t: Expr, dtype: str) -> Expr:
    lo, hi = qrange(dtype)
    return make_call(
        "cast", [make_call("clip", [t], a_min=float(lo), a_max=float(hi))], dtype=dtype
    )


def fixed_point_expr(t: Expr, multiplier: np.ndarray, rounding: str) -> Expr:
    """``t * multiplier`` (int32, ``multiplier`` broadcasting against it) in int64 fixed
    point, as :func:`~relaykit.op.qnn._common.fixed_point_multiply` computes it."""
    m, sh = _fixed_points(multiplier)
    v = make_call("cast", [t], dtype="int64")
    left = np.maximum(sh, 0)
    if np.any(left):
        v = make_call("left_shift", [v, _c(left, "int64")])
    v = make_call("multiply", [v, _c(m, "int64")])
    total = np.maximum(-sh, 0) + 31
    pos = np.left_shift(np.int64(1), total - 1)
    if rounding == "UPWARD":
        rnd: Expr = _c(pos, "int64")
    elif rounding == "TONEAREST_EVEN":
        quotient = make_call("right_shift", [v, _c(total, "int64")])
        odd = make_call("bitwise_and", [quotient, _c(1, "int64")])
        rnd = make_call("add", [odd, _c(pos - 1, "int64")])
    else:
        ge = make_call("greater_equal", [v, _c(0, "int64")])
        rnd = make_call("where", [ge, _c(pos, "int64"), _c(pos - 1, "int64")])
    v = make_call("right_shift", [make_call("add", [v, rnd]), _c(total, "int64")])
    return make_call("cast", [v], dtype="int32")


def requantize_expr(
    x: Expr,
    ndim: int,
    isc: np.ndarray,
    izp: np.ndarray,
    osc: np.ndarray,
    ozp: np.ndarray,
    axis: int,
    rounding: str,
    compute_dtype: str,
    out_dtype: str,
) -> Expr:
    """TVM's requantize lowering for constant parameters (see ``requantize_values``)."""
    nd = max(ndim, 1)
    isc = np.asarray(isc, np.float32).reshape(-1)
    osc = np.asarray(osc, np.float32).reshape(-1)
    mult = channel_shape(isc.astype(np.float64) / osc.astype(np.float64), nd, axis)
    izp_b = channel_shape(izp, nd, axis)
    ozp_b = channel_shape(ozp, nd, axis)
    if compute_dtype in ("float32", "float64"):
        ft = compute_dtype
        v: Expr = make_call("cast", [x], dtype=ft)
        v = make_call("subtract", [v, _c(izp_b, ft)])
        v = make_call("multiply", [v, _c(mult, ft)])
        if rounding == "TONEAREST_EVEN":
            v = make_call("add", [rint_expr(v, ft, rounding), _c(ozp_b, ft)])
        else:
            v = rint_expr(make_call("add", [v, _c(ozp_b, ft)]), ft, rounding)
        return _clip_cast(v, out_dtype)
    t: Expr = make_call("subtract", [make_call("cast", [x], dtype="int32"), _c(izp_b, "int32")])
    if not (isc.size == 1 and osc.size == 1 and isc[0] == osc[0]):
        t = fixed_point_expr(t, np.asarray(mult, np.float64), rounding)
    t = make_call("add", [t, _c(ozp_b, "int32")])
    return t if out_dtype == "int32" else _clip_cast(t, out_dtype)


def rint_expr(v: Expr, ft: str, rounding: str = "TONEAREST") -> Expr:
    """``v`` rounded to nearest as the kernels' :func:`~._common.rint` rounds: halves
    away from zero (Relay's ``round``), up, or to even (``2 * round(v / 2)`` where ``v``
    is a half)."""
    if rounding == "UPWARD":
        return make_call("floor", [make_call("add", [v, _c(np.asarray(0.5), ft)])])
    nearest = make_call("round", [v])
    if rounding != "TONEAREST_EVEN":
        return nearest
    frac = make_call("abs", [make_call("subtract", [v, make_call("trunc", [v])])])
    half = make_call("equal", [frac, _c(np.asarray(0.5), ft)])
    even = make_call(
        "multiply",
        [make_call("round", [make_call("multiply", [v, _c(np.asarray(0.5), ft)])]),
         _c(np.asarray(2.0), ft)],
    )  # fmt: skip
    return make_call("where", [half, even, nearest])


def _tensor(t: Any) -> TensorType:
    if not isinstance(t, TensorType):
        raise IRError(f"a QNN operator needs tensor types to be lowered, got {t}")
    return t


def quantize_expr(
    x: Expr,
    s: np.ndarray,
    z: np.ndarray,
    nd: int,
    axis: int,
    out: str,
    rounding: str = "TONEAREST",
) -> Expr:
    """``clip(round(x / s) + z)`` in ``out`` (float32 arithmetic; ``rounding`` as
    :func:`rint_expr`'s)."""
    s = channel_shape(s, nd, axis)
    z = channel_shape(z, nd, axis)
    v = make_call("cast", [x], dtype="float32")
    v = make_call("divide", [v, _c(s, "float32")])
    v = make_call("add", [rint_expr(v, "float32", rounding), _c(z, "float32")])
    return _clip_cast(v, out)


def dequantize_expr(x: Expr, s: np.ndarray, z: np.ndarray, nd: int, axis: int) -> Expr:
    """``float32(int32(x) - z) * s``."""
    s = channel_shape(s, nd, axis)
    z = channel_shape(z, nd, axis)
    t = make_call("subtract", [make_call("cast", [x], dtype="int32"), _c(z, "int32")])
    return make_call("multiply", [make_call("cast", [t], dtype="float32"), _c(s, "float32")])


def _quantize(attrs: Attrs, args: Sequence[Expr], types: Sequence[Any]) -> Expr:
    op = "qnn.quantize"
    data = _tensor(types[0])
    out = str(attrs.out_dtype)
    nd = max(len(data.shape), 1)
    s = _scale(args[1], "output_scale", op)
    z = _zp(args[2], out, "output_zero_point", op)
    rounding = str(attrs.get("rounding", "TONEAREST"))
    return quantize_expr(args[0], s, z, nd, int(attrs.axis) % nd, out, rounding)


def _dequantize(attrs: Attrs, args: Sequence[Expr], types: Sequence[Any]) -> Expr:
    op = "qnn.dequantize"
    data = _tensor(types[0])
    nd = max(len(data.shape), 1)
    s = _scale(args[1], "input_scale", op)
    z = _zp(args[2], data.dtype, "input_zero_point", op)
    v = dequantize_expr(args[0], s, z, nd, int(attrs.axis) % nd)
    out = str(attrs.out_dtype)
    return v if out == "float32" else make_call("cast", [v], dtype=out)


def _leaky_relu(attrs: Attrs, args: Sequence[Expr], types: Sequence[Any]) -> Expr:
    op = "qnn.leaky_relu"
    t = _tensor(types[0])
    nd = len(t.shape)
    s = _scale(args[1], "input_scale", op)
    z = _zp(args[2], t.dtype, "input_zero_point", op)
    os = _scale(args[3], "output_scale", op)
    oz = _zp(args[4], t.dtype, "output_zero_point", op)
    zc = _c(np.asarray(z).reshape(-1)[0], "int32")
    shifted = make_call("subtract", [make_call("cast", [args[0]], dtype="int32"), zc])
    prod = fixed_point_expr(shifted, np.asarray(float(attrs.alpha)), "UPWARD")
    zero = np.int32(0)
    rp = requantize_expr(prod, nd, s, zero, os, oz, -1, "UPWARD", "int64", "int32")
    ri = requantize_expr(args[0], nd, s, z, os, oz, -1, "UPWARD", "int64", "int32")
    below = make_call("less", [make_call("cast", [args[0]], dtype="int32"), zc])
    return _clip_cast(make_call("where", [below, rp, ri]), t.dtype)


class _ExprBuilder:
    def call(self, op: str, *args: Any) -> Any:
        return make_call(op, list(args))

    def const(self, value: float) -> Any:
        return _c(value, "float32")


def _unary(short: str) -> Any:
    fn = FLOAT_FUNCS[short]
    op = f"qnn.{short}"

    def hook(attrs: Attrs, args: Sequence[Expr], types: Sequence[Any]) -> Expr:
        t = _tensor(types[0])
        nd = max(len(t.shape), 1)
        s = _scale(args[1], "scale", op)
        z = _zp(args[2], t.dtype, "zero_point", op)
        os = _scale(args[3], "output_scale", op)
        oz = _zp(args[4], t.dtype, "output_zero_point", op)
        y = fn(_ExprBuilder(), dequantize_expr(args[0], s, z, nd, nd - 1))
        return quantize_expr(y, os, oz, nd, nd - 1, t.dtype)

    return hook


def _requantize(attrs: Attrs, args: Sequence[Expr], types: Sequence[Any]) -> Expr:
    op = "qnn.requantize"
    data = _tensor(types[0])
    out = str(attrs.out_dtype)
    nd = max(len(data.shape), 1)
    return requantize_expr(
        args[0],
        len(data.shape),
        _scale(args[1], "input_scale", op),
        _zp(args[2], data.dtype, "input_zero_point", op),
        _scale(args[3], "output_scale", op),
        _zp(args[4], out, "output_zero_point", op),
        int(attrs.axis) % nd,
        resolve_rounding(attrs.rounding),
        resolve_compute_dtype(attrs.compute_dtype),
        out,
    )


def _binary_params(op: str, args: Sequence[Expr], dtype: str) -> list[np.ndarray]:
    names: tuple[str, ...] = ("lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point")
    names += ("output_scale", "output_zero_point")
    return [
        _scale(a, n, op) if n.endswith("scale") else _zp(a, dtype, n, op)
        for a, n in zip(args[2:], names, strict=True)
    ]


def _upcast(x: Expr, ndim: int, s: Any, z: Any, os: Any, oz: Any, axis: int) -> Expr:
    if np.array_equal(s, os) and np.array_equal(z, oz):
        return make_call("cast", [x], dtype="int32")
    nd = max(ndim, 1)
    return requantize_expr(x, ndim, s, z, os, oz, axis % nd, "UPWARD", "int64", "int32")


def _add_sub(name: str) -> Any:
    def hook(attrs: Attrs, args: Sequence[Expr], types: Sequence[Any]) -> Expr:
        lt, rt = _tensor(types[0]), _tensor(types[1])
        ls, lz, rs, rz, os, oz = _binary_params(name, args, lt.dtype)
        a = _upcast(args[0], len(lt.shape), ls, lz, os, oz, int(attrs.lhs_axis))
        b = _upcast(args[1], len(rt.shape), rs, rz, os, oz, int(attrs.rhs_axis))
        zp = _c(np.asarray(oz).reshape(-1)[0], "int32")
        if name == "qnn.add":
            t = make_call("subtract", [make_call("add", [a, b]), zp])
        else:
            t = make_call("add", [make_call("subtract", [a, b]), zp])
        return _clip_cast(t, lt.dtype)

    return hook


def _mul(attrs: Attrs, args: Sequence[Expr], types: Sequence[Any]) -> Expr:
    lt, rt = _tensor(types[0]), _tensor(types[1])
    ls, lz, rs, rz, os, oz = _binary_params("qnn.mul", args, lt.dtype)
    lzb = channel_shape(lz, max(len(lt.shape), 1), int(attrs.lhs_axis))
    rzb = channel_shape(rz, max(len(rt.shape), 1), int(attrs.rhs_axis))
    a = make_call("subtract", [make_call("cast", [args[0]], dtype="int32"), _c(lzb, "int32")])
    b = make_call("subtract", [make_call("cast", [args[1]], dtype="int32"), _c(rzb, "int32")])
    prod = make_call("multiply", [a, b])
    out_t = _tensor(types[-1])
    nd = max(len(out_t.shape), 1)
    axis = mul_axis(ls, rs, attrs) % nd
    zero = np.int32(0)
    return requantize_expr(
        prod, len(out_t.shape), _mul_scale(ls, rs), zero, os, oz, axis, "UPWARD", "int64", lt.dtype
    )


def _core(name: str, float_op: str, kernel_axis: Any) -> Any:
    def hook(attrs: Attrs, args: Sequence[Expr], types: Sequence[Any]) -> Expr:
        dt, wt = _tensor(types[0]), _tensor(types[1])
        izp = _zp(args[2], dt.dtype, "input_zero_point", name)
        kzp = _zp(args[3], wt.dtype, "kernel_zero_point", name)
        _scale(args[4], "input_scale", name)
        _scale(args[5], "kernel_scale", name)
        kz = channel_shape(kzp, max(len(wt.shape), 1), kernel_axis(attrs, len(wt.shape)))
        a = make_call("subtract", [make_call("cast", [args[0]], dtype="int32"), _c(izp, "int32")])
        b = make_call("subtract", [make_call("cast", [args[1]], dtype="int32"), _c(kz, "int32")])
        return Call(default_registry.get(float_op), [a, b], core_attrs(float_op, attrs))

    return hook


def _emulated(name: str, float_op: str) -> Any:
    """Dequantize, the float operator, quantize to the input's dtype (per tensor)."""

    def hook(attrs: Attrs, args: Sequence[Expr], types: Sequence[Any]) -> Expr:
        t, out_t = _tensor(types[0]), _tensor(types[-1])
        s = _scale(args[1], "input_scale", name)
        z = _zp(args[2], t.dtype, "input_zero_point", name)
        os = _scale(args[3], "output_scale", name)
        oz = _zp(args[4], t.dtype, "output_zero_point", name)
        v = dequantize_expr(args[0], s, z, max(len(t.shape), 1), 0)
        y = Call(default_registry.get(float_op), [v], float_attrs(float_op, attrs))
        return quantize_expr(y, os, oz, max(len(out_t.shape), 1), 0, str(t.dtype))

    return hook


def _dense_pack(attrs: Attrs, args: Sequence[Expr], types: Sequence[Any]) -> Expr:
    """Unpack the weight to ``(N, C)`` (transpose, reshape), then ``qnn.dense``'s lowering."""
    name = "qnn.contrib_dense_pack"
    dt, wt = _tensor(types[0]), _tensor(types[1])
    izp = _zp(args[2], dt.dtype, "input_zero_point", name)
    kzp = _zp(args[3], wt.dtype, "kernel_zero_point", name)
    _scale(args[4], "input_scale", name)
    _scale(args[5], "kernel_scale", name)
    w = args[1]
    shape = [int(d) for d in wt.shape]
    n, c = dense_pack.unpacked_shape(shape, str(attrs.weight_layout))
    if len(shape) > 2:
        axes = [0, 2, 1] if len(shape) == 3 else [0, 2, 1, 3]
        w = make_call("transpose", [w], axes=axes)
        w = make_call("reshape", [w], newshape=[int(n), int(c)])
    kz = channel_shape(kzp, 2, 0)
    a = make_call("subtract", [make_call("cast", [args[0]], dtype="int32"), _c(izp, "int32")])
    b = make_call("subtract", [make_call("cast", [w], dtype="int32"), _c(kz, "int32")])
    out = str(attrs.out_dtype or "int32")
    return make_call("nn.dense", [a, b], units=int(n), out_dtype=out)


def _concatenate(attrs: Attrs, args: Sequence[Expr], types: Sequence[Any]) -> Expr:
    op = "qnn.concatenate"
    data_t = types[0]
    if not isinstance(data_t, TupleType):
        raise IRError(f"{op}: the input must be a tuple, got {data_t}")
    out = _tensor(types[-1])
    scales, zps = args[1], args[2]
    if not isinstance(scales, Tuple) or not isinstance(zps, Tuple):
        raise IRError(f"{op}: input_scales and input_zero_points must be tuples of constants")
    os = _scale(args[3], "output_scale", op)
    oz = _zp(args[4], out.dtype, "output_zero_point", op)
    parts: list[Expr] = []
    for i, ft in enumerate(data_t.fields):
        t = _tensor(ft)
        x = args[0].fields[i] if isinstance(args[0], Tuple) else TupleGetItem(args[0], i)
        s = _scale(scales.fields[i], f"input scale {i}", op)
        z = _zp(zps.fields[i], t.dtype, f"input zero point {i}", op)
        if np.array_equal(s, os) and np.array_equal(z, oz):
            parts.append(x)
        else:
            parts.append(
                requantize_expr(x, len(t.shape), s, z, os, oz, -1, "UPWARD", "int64", out.dtype)
            )
    return make_call("concatenate", [Tuple(parts)], axis=int(attrs.axis))


CANONICALIZE = {
    "qnn.quantize": _quantize,
    "qnn.dequantize": _dequantize,
    "qnn.requantize": _requantize,
    "qnn.add": _add_sub("qnn.add"),
    "qnn.subtract": _add_sub("qnn.subtract"),
    "qnn.mul": _mul,
    "qnn.dense": _core("qnn.dense", "nn.dense", lambda attrs, nd: 0),
    "qnn.batch_matmul": _core(
        "qnn.batch_matmul",
        "nn.batch_matmul",
        lambda attrs, nd: nd - 2 if attrs.transpose_b else nd - 1,
    ),
    "qnn.conv2d": _core(
        "qnn.conv2d", "nn.conv2d", lambda attrs, nd: str(attrs.kernel_layout).index("O")
    ),
    "qnn.conv2d_transpose": _core(
        "qnn.conv2d_transpose",
        "nn.conv2d_transpose",
        lambda attrs, nd: str(attrs.kernel_layout).index("O"),
    ),
    "qnn.concatenate": _concatenate,
    "qnn.contrib_dense_pack": _dense_pack,
    "qnn.leaky_relu": _leaky_relu,
    "qnn.avg_pool2d": _emulated("qnn.avg_pool2d", "nn.avg_pool2d"),
    "qnn.softmax": _emulated("qnn.softmax", "nn.softmax"),
    **{f"qnn.{short}": _unary(short) for short in FLOAT_FUNCS},
}

for _name, _hook in CANONICALIZE.items():
    register_op_attr(_name, "FTVMQnnCanonicalize", _hook, 10)
