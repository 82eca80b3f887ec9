"""Rules of elementwise operators: ``add`` / ``subtract`` / ``multiply`` (``qnn.add``...;
an add or subtract whose operands do not move to the result's scale exactly is rounded
once, see :func:`rounded_once`), ``minimum`` / ``maximum`` (both sides brought to one
scale), the QNN unary operators
(``exp``, ``tanh``, ``sigmoid``...), ``nn.relu`` and ``clip`` (bounds quantized),
``nn.leaky_relu``."""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.errors import IRError
from relaykit.ir.affine_type import TensorAffineType
from relaykit.ir.expr import Call, Constant, Expr, const
from relaykit.op import tensor
from relaykit.op.define import make_call
from relaykit.op.qnn import leaky_relu, quantize, requantize

from .registry import (
    approx_equal,
    fold,
    infer_shape,
    op_name,
    register_fake_quantization_to_integer,
    same_affine,
    scalar_value,
)

__all__ = [
    "binary_types",
    "fine_shift",
    "qnn_binary_rule",
    "identity_binary_rule",
    "rounded_once",
    "unary_rule",
]


def binary_types(
    expr: Call, type_map: dict[Expr, Any]
) -> tuple[Expr, Expr, TensorAffineType, TensorAffineType, TensorAffineType]:
    """Both inputs of a binary operator with their affine types (a float constant input
    quantized with the other's parameters) and the result's type."""
    left, right = expr.args
    lt, rt = type_map.get(left), type_map.get(right)
    out_t: TensorAffineType = type_map[expr]
    if lt is None and rt is None:
        raise IRError(f"{op_name(expr)}: neither input is quantized")
    if lt is None:
        left = _quantize_const(left, rt, expr)
        lt = rt
    if rt is None:
        right = _quantize_const(right, lt, expr)
        rt = lt
    if not isinstance(lt, TensorAffineType) or not isinstance(rt, TensorAffineType):
        raise IRError(f"{op_name(expr)}: an input is not a quantized tensor")
    if lt.dtype != out_t.dtype:
        out_t = lt
    return left, right, lt, rt, out_t


def _quantize_const(c: Expr, t: Any, expr: Call) -> Expr:
    if not isinstance(c, Constant):
        raise IRError(f"{op_name(expr)}: an input is neither quantized nor a constant")
    return quantize(c, t.scale, t.zero_point, axis=t.axis, out_dtype=t.dtype)


def _is_scalar(e: Expr) -> bool:
    value = fold(e)
    return isinstance(value, Constant) and value.data.numpy().size == 1


_QNN_BINARY = {"add": "qnn.add", "subtract": "qnn.subtract", "multiply": "qnn.mul"}

#: Most bits below the result's step kept by the int32 sums of :func:`rounded_once`.
_FINE_BITS = 20


def fine_shift(ratio: float, terms: int = 2) -> int:
    """The ``k`` for which ``terms`` values of 8 bits, each scaled by ``ratio * 2**k``,
    still sum inside int32 (at most :data:`_FINE_BITS`; 0 when none does).

    >>> fine_shift(1.0), fine_shift(100.0), fine_shift(1e9)
    (20, 14, 0)
    """
    if not ratio > 0:
        return 0
    room = 2.0**30 / (256.0 * terms * ratio)
    return max(0, min(_FINE_BITS, int(np.floor(np.log2(room))))) if room >= 1 else 0


def _float_constant(e: Expr, type_map: dict[Expr, Any]) -> np.ndarray | None:
    """The values of a float constant operand (not a quantized tensor), else None."""
    if type_map.get(e) is not None or not isinstance(e, Constant):
        return None
    value = e.data.numpy()
    return value.astype(np.float64) if value.dtype.kind == "f" else None


def rounded_once(
    name: str, left: Expr, right: Expr, lt: TensorAffineType, rt: TensorAffineType,
    out_t: TensorAffineType, constants: tuple[np.ndarray | None, ...] = (None, None),
) -> Expr | None:  # fmt: skip
    """``add`` / ``subtract`` of two quantized tensors rounded once, as the float graph
    it replaces rounds: each operand requantized to int32 at a step ``2**k`` times finer
    than the result's (exact to ``2**-k`` of a step), summed, then requantized to the
    result. ``qnn.add`` (TVM's form, kept when it is exact: both operands' scales whole
    multiples of the result's) rounds each operand to the result's step first, one step
    off the float result on a large share of the elements. A float constant operand
    (``constants``, its values) goes to the fine step from its real values, not rounded
    to the other operand's parameters first. None where ``qnn.add`` is exact or no
    finer step fits int32."""
    so = scalar_value(out_t.scale)
    scales = [scalar_value(lt.scale), scalar_value(rt.scale)]
    if so is None or so <= 0 or any(s is None for s in scales):
        return None
    ratios = [float(s) / so for s in scales if s is not None]
    if all(abs(r - round(r)) <= 1e-6 * r and round(r) >= 1 for r in ratios):
        return None  # each operand moves to the result's step exactly: qnn.add rounds once
    k = fine_shift(max(ratios))
    if k < 8:
        return None
    step = np.float32(so / 2.0**k)
    fine = const(step, "float32")
    zero = const(np.int32(0), "int32")
    operands: list[Expr] = []
    for x, t, c in ((left, lt, constants[0]), (right, rt, constants[1])):
        if c is None:
            operands.append(requantize(x, t.scale, t.zero_point, fine, zero, out_dtype="int32"))
            continue
        v = np.rint(c / float(step))
        if not np.all(np.isfinite(v)) or np.abs(v).max(initial=0) >= 2.0**30:
            return None  # beyond the room the fine step leaves: the quantized constant
        operands.append(const(v.astype(np.int32), "int32"))
    total = make_call(name, operands)
    return requantize(total, fine, zero, out_t.scale, out_t.zero_point, out_dtype=lt.dtype)


def qnn_binary_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``add`` / ``subtract`` / ``multiply`` -> ``qnn.add`` / ``qnn.subtract`` / ``qnn.mul``
    (a bias-like int32 add of equal parameters stays a plain ``add``; an 8-bit add or
    subtract ``qnn.add`` would round twice is :func:`rounded_once`)."""
    left, right, left_t, right_t, out_t = binary_types(expr, type_map)
    name = op_name(expr)
    z = fold(out_t.zero_point)
    zero_out = isinstance(z, Constant) and not np.any(z.data.numpy())
    if (
        name == "add"
        and left_t.dtype == "int32"
        and same_affine(left_t, right_t)
        and approx_equal(left_t.scale, out_t.scale)
        and approx_equal(left_t.zero_point, out_t.zero_point)
        and zero_out
    ):
        return [tensor.add(left, right), left_t]
    if not (_is_scalar(out_t.scale) and _is_scalar(out_t.zero_point)):
        raise IRError(f"{name}: the output scale and zero point must be scalars")
    once = None
    if (
        name != "multiply"
        and left_t.dtype in ("int8", "uint8")
        and not per_channel_pair(left_t, right_t)
    ):
        floats = tuple(_float_constant(a, type_map) for a in expr.args)
        once = rounded_once(name, left, right, left_t, right_t, out_t, floats)
    if once is not None:
        return [once, TensorAffineType(out_t.scale, out_t.zero_point, left_t.dtype, -1)]
    out = make_call(
        _QNN_BINARY[name],
        [
            left,
            right,
            left_t.scale,
            left_t.zero_point,
            right_t.scale,
            right_t.zero_point,
            out_t.scale,
            out_t.zero_point,
        ],
        lhs_axis=left_t.axis,
        rhs_axis=right_t.axis,
    )
    return [out, TensorAffineType(out_t.scale, out_t.zero_point, left_t.dtype, -1)]


def per_channel_pair(lt: TensorAffineType, rt: TensorAffineType) -> bool:
    """Whether either operand has more than one scale."""
    return not (_is_scalar(lt.scale) and _is_scalar(rt.scale))


def _to(x: Expr, t: TensorAffineType, out_t: TensorAffineType) -> Expr:
    if same_affine(t, out_t):
        return x
    return requantize(
        x, t.scale, t.zero_point, out_t.scale, out_t.zero_point, axis=t.axis, out_dtype=out_t.dtype
    )


def identity_binary_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``minimum`` / ``maximum``: both inputs requantized to the result's parameters
    (both are monotonic, so they commute with the requantize)."""
    left, right, left_t, right_t, out_t = binary_types(expr, type_map)
    target = TensorAffineType(out_t.scale, out_t.zero_point, left_t.dtype, out_t.axis)
    out = make_call(op_name(expr), [_to(left, left_t, target), _to(right, right_t, target)])
    return [out, target]


for _name in _QNN_BINARY:
    register_fake_quantization_to_integer(_name, qnn_binary_rule)
for _name in ("minimum", "maximum"):
    register_fake_quantization_to_integer(_name, identity_binary_rule)


def unary_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``f(x)`` -> ``qnn.f(x, scale, zero point, output scale, output zero point)``."""
    arg = expr.args[0]
    x_t: TensorAffineType = type_map[arg]
    out_t: TensorAffineType = type_map[expr]
    out = make_call(
        "qnn." + op_name(expr), [arg, x_t.scale, x_t.zero_point, out_t.scale, out_t.zero_point]
    )
    return [out, TensorAffineType(out_t.scale, out_t.zero_point, x_t.dtype, -1)]


for _name in ("sqrt", "rsqrt", "exp", "erf", "sigmoid", "tanh", "log", "abs"):
    register_fake_quantization_to_integer(_name, unary_rule)


@register_fake_quantization_to_integer("nn.leaky_relu")
def leaky_relu_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``nn.leaky_relu`` -> ``qnn.leaky_relu`` into the result's parameters."""
    arg = expr.args[0]
    x_t: TensorAffineType = type_map[arg]
    out_t: TensorAffineType = type_map[expr]
    out = leaky_relu(
        arg, float(expr.attrs.alpha), x_t.scale, x_t.zero_point, out_t.scale, out_t.zero_point
    )
    return [out, TensorAffineType(out_t.scale, out_t.zero_point, x_t.dtype, -1)]


def _channel_const(values: np.ndarray, t: TensorAffineType, arg: Expr) -> Expr:
    """Per-tensor values as a scalar constant, per-channel ones shaped to broadcast."""
    flat = values.reshape(-1)
    if flat.size == 1:
        return const(flat.reshape(()).astype(t.dtype), t.dtype)
    shape = [1] * len(infer_shape(arg))
    shape[t.axis] = flat.size
    return const(flat.reshape(shape).astype(t.dtype), t.dtype)


def _params(t: TensorAffineType, what: str) -> tuple[np.ndarray, np.ndarray]:
    s, z = fold(t.scale), fold(t.zero_point)
    if not (isinstance(s, Constant) and isinstance(z, Constant)):
        raise IRError(f"{what}: the scale and zero point must be constants")
    return s.data.numpy().astype(np.float32), z.data.numpy().astype(np.int64)


@register_fake_quantization_to_integer("nn.relu")
def relu_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``relu`` -> ``maximum(x, zero_point)``."""
    arg = expr.args[0]
    t: TensorAffineType = type_map[arg]
    _, z = _params(t, "nn.relu")
    return [tensor.maximum(arg, _channel_const(z, t, arg)), t]


def _bound(value: float, s: np.ndarray, z: np.ndarray, dtype: str) -> np.ndarray:
    info = np.iinfo(np.dtype(dtype))
    with np.errstate(over="ignore", invalid="ignore"):
        v = (np.float32(value) / s).astype(np.float64)  # as qnn.quantize divides, in float32
    # round halves away from zero, as qnn.quantize does
    q = np.sign(v) * np.floor(np.abs(v) + 0.5) + z
    return np.clip(np.nan_to_num(q), info.min, info.max)


@register_fake_quantization_to_integer("clip")
def clip_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``clip(x, a, b)`` -> the same clip of the integers, the bounds quantized as the
    final ``qnn.quantize`` would round them (so the result is the same)."""
    arg = expr.args[0]
    t: TensorAffineType = type_map[arg]
    s, z = _params(t, "clip")
    lo = _bound(float(expr.attrs.a_min), s, z, t.dtype)
    hi = _bound(float(expr.attrs.a_max), s, z, t.dtype)
    if lo.size == 1 and hi.size == 1:
        return [tensor.clip(arg, float(lo.reshape(-1)[0]), float(hi.reshape(-1)[0])), t]
    bounded = tensor.maximum(arg, _channel_const(lo, t, arg))
    return [tensor.minimum(bounded, _channel_const(hi, t, arg)), t]
