"""Shared pieces of the QNN operators: quantization-parameter checks (types at type
inference, constant values at construction and canonicalization) and the exact
integer arithmetic TVM's QNN lowering uses (Q31 fixed-point multiply with int64
intermediates, ``UPWARD`` / ``TONEAREST`` rounding).

A quantized tensor holds integers ``q`` standing for ``scale * (q - zero_point)``.
Scales and zero points are scalars (per tensor) or vectors along ``axis`` (per
channel).

>>> fixed_point(0.5)
(1073741824, 0)
>>> fixed_point_multiply(np.array([3, -3]), 0.5, "UPWARD").tolist()
[2, -1]
>>> fixed_point_multiply(np.array([3, -3]), 0.5, "TONEAREST").tolist()
[2, -2]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import ExecutionError, IRError
from relaykit.ir.expr import Constant, Expr, Var
from relaykit.ir.types import TensorType, Type
from relaykit.op._numeric import round_half_away
from relaykit.op.define import TypeRelError

__all__ = [
    "QUANT_DTYPES",
    "ROUNDINGS",
    "qrange",
    "fixed_point",
    "fixed_point_multiply",
    "rint",
    "QUANTIZE_ROUNDINGS",
    "requantize_values",
    "check_qparam_type",
    "check_scale_const",
    "check_zero_point_const",
    "const_array",
    "channel_shape",
    "static_dtype",
    "runtime_qparams",
]

QUANT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32")
#: ``qnn.requantize``'s rounding modes: TVM's two, and halves to even (relaykit's addition:
#: ONNX's QLinearConv/QLinearMatMul and onnxruntime scale in float32 and round so).
ROUNDINGS = ("UPWARD", "TONEAREST", "TONEAREST_EVEN")


def qrange(dtype: str) -> tuple[int, int]:
    """The smallest and largest value of integer ``dtype``."""
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


def fixed_point(multiplier: float) -> tuple[int, int]:
    """``multiplier`` as ``(m, shift)`` with ``multiplier ~= m * 2**(shift - 31)``, ``m`` a
    Q31 significand rounded half away from zero (TVM's ``GetFixedPointMultiplierShift``)."""
    if multiplier == 0.0:
        return 0, 0
    sig, exp = math.frexp(multiplier)
    q = math.floor(abs(sig) * (1 << 31) + 0.5) * (1 if sig >= 0 else -1)
    if q == 1 << 31:
        q //= 2
        exp += 1
    return q, exp


def _fixed_points(multipliers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pairs = [fixed_point(float(m)) for m in multipliers.reshape(-1)]
    mult = np.array([p[0] for p in pairs], np.int64).reshape(multipliers.shape)
    shift = np.array([p[1] for p in pairs], np.int64).reshape(multipliers.shape)
    return mult, shift


def fixed_point_multiply(x: np.ndarray, multiplier: Any, rounding: str) -> np.ndarray:
    """``x * multiplier`` in int64 fixed point, rounded as ``rounding`` says, as int32
    (``multiplier`` a float or an array broadcasting against ``x``)."""
    mult, shift = _fixed_points(np.asarray(multiplier, np.float64))
    v = np.asarray(x).astype(np.int64)
    left = np.maximum(shift, 0)
    total = np.maximum(-shift, 0) + 31
    v = np.left_shift(v, left) * mult
    pos = np.left_shift(np.int64(1), total - 1)
    if rounding == "UPWARD":
        rnd = pos
    elif rounding == "TONEAREST_EVEN":  # a half goes up when the quotient is odd
        rnd = pos - 1 + (np.right_shift(v, total) & 1)
    else:
        rnd = np.where(v >= 0, pos, pos - 1)
    return np.right_shift(v + rnd, total).astype(np.int32)


#: ``qnn.quantize``'s rounding modes: halves away from zero (TVM's, the default), halves
#: up (``UPWARD``, as requantize's), halves to even (ONNX's QuantizeLinear, onnxruntime).
QUANTIZE_ROUNDINGS = ("TONEAREST", "UPWARD", "TONEAREST_EVEN")


def rint(x: np.ndarray, rounding: str = "TONEAREST") -> np.ndarray:
    """Round to nearest; halves away from zero (TVM's ``round``, LLVM's ``llvm.round``,
    which QNN's quantize and float requantize use), up (``UPWARD``) or to even
    (``TONEAREST_EVEN``).

    >>> rint(np.array([0.5, 1.5, -0.5])).tolist()
    [1.0, 2.0, -1.0]
    >>> rint(np.array([0.5, 1.5, -0.5]), "TONEAREST_EVEN").tolist()
    [0.0, 2.0, -0.0]
    """
    x = np.asarray(x)
    if rounding == "TONEAREST_EVEN":
        return np.rint(x)
    if rounding == "UPWARD":
        return np.floor(x + x.dtype.type(0.5))
    return round_half_away(x)


def channel_shape(value: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """A per-channel vector reshaped to broadcast along ``axis`` of an ``ndim`` tensor (a
    scalar stays a scalar)."""
    flat = np.asarray(value).reshape(-1)
    if flat.size == 1:
        return flat.reshape(())
    shape = [1] * ndim
    shape[axis % ndim] = flat.size
    return flat.reshape(shape)


def requantize_values(
    x: np.ndarray,
    in_scale: np.ndarray,
    in_zp: np.ndarray,
    out_scale: np.ndarray,
    out_zp: np.ndarray,
    axis: int,
    rounding: str,
    compute_dtype: str,
    out_dtype: str,
) -> np.ndarray:
    """TVM's requantize on NumPy arrays, step for step as the canonical form computes it.

    In float, TVM adds the output zero point before rounding; ``TONEAREST_EVEN`` rounds
    first, as onnxruntime's requantization does (``round(acc * scale) + zero_point``)."""
    nd = max(np.ndim(x), 1)
    izp = channel_shape(in_zp, nd, axis).astype(np.int64)
    ozp = channel_shape(out_zp, nd, axis).astype(np.int64)
    isc = np.asarray(in_scale, np.float32).reshape(-1)
    osc = np.asarray(out_scale, np.float32).reshape(-1)
    lo, hi = qrange(out_dtype)
    if compute_dtype in ("float32", "float64"):
        ft = np.dtype(compute_dtype)
        mult = channel_shape(isc.astype(np.float64) / osc.astype(np.float64), nd, axis)
        v = (np.asarray(x).astype(ft) - izp.astype(ft)) * mult.astype(ft)
        if rounding == "TONEAREST_EVEN":
            v = rint(v, rounding) + ozp.astype(ft)
        else:
            v = rint(v + ozp.astype(ft), rounding)
        return np.asarray(np.clip(v, lo, hi).astype(out_dtype))
    v = (np.asarray(x).astype(np.int64) - izp).astype(np.int32)
    per_tensor = isc.size == 1 and osc.size == 1
    if not (per_tensor and isc[0] == osc[0]):
        mult = channel_shape(isc.astype(np.float64) / osc.astype(np.float64), nd, axis)
        v = fixed_point_multiply(v, mult, rounding)
    v = (v.astype(np.int64) + ozp).astype(np.int32)
    if out_dtype == "int32":
        return np.asarray(v)
    return np.asarray(np.clip(v, lo, hi).astype(out_dtype))


def check_qparam_type(
    t: Type, dtype: str, what: str, op: str, data_shape: Sequence[Any], axis: int
) -> None:
    """A scale (``float32``) or zero point (``int32``) must be a scalar or a vector of one
    entry per channel along ``axis`` of the data."""
    if not isinstance(t, TensorType) or t.dtype != dtype:
        raise TypeRelError(f"{op}: {what} must be a {dtype} tensor, got {t}")
    shape = tuple(t.shape)
    if len(shape) == 0 or all(d == 1 for d in shape):
        return
    if len(shape) != 1:
        raise TypeRelError(f"{op}: {what} must be a scalar or a vector, got shape {shape}")
    nd = len(data_shape)
    if nd == 0 or not -nd <= axis < nd:
        raise TypeRelError(f"{op}: axis {axis} is out of range for data of rank {nd}")
    channels = data_shape[axis % nd]
    if isinstance(channels, int) and isinstance(shape[0], int) and shape[0] != channels:
        raise TypeRelError(
            f"{op}: {what} has {shape[0]} entries but axis {axis} of the data has "
            f"{channels} channels"
        )


def static_dtype(expr: Expr) -> str | None:
    """The dtype of ``expr`` when known without type inference (a constant, an annotated
    variable or a typed expression)."""
    if isinstance(expr, Constant):
        return str(expr.data.dtype)
    if isinstance(expr, Var) and isinstance(expr.type_annotation, TensorType):
        return str(expr.type_annotation.dtype)
    if expr.has_checked_type and isinstance(expr.checked_type, TensorType):
        return str(expr.checked_type.dtype)
    return None


def check_scale_const(expr: Any, what: str, op: str) -> None:
    """A constant scale must be finite and positive (others are checked when run)."""
    if isinstance(expr, Constant):
        _check_scale_values(expr.data.numpy(), what, op, IRError)


def _check_scale_values(values: np.ndarray, what: str, op: str, err: type[Exception]) -> None:
    arr = np.asarray(values, np.float64)
    if arr.size == 0 or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise err(f"{op}: {what} must be finite and positive, got {arr.reshape(-1).tolist()}")


def check_zero_point_const(expr: Any, dtype: str | None, what: str, op: str) -> None:
    """A constant zero point must be an integer within the quantized ``dtype``'s range."""
    if isinstance(expr, Constant) and dtype is not None:
        _check_zp_values(expr.data.numpy(), dtype, what, op, IRError)


def _check_zp_values(
    values: np.ndarray, dtype: str, what: str, op: str, err: type[Exception]
) -> None:
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        raise err(f"{op}: {what} must be an integer, got dtype {arr.dtype}")
    if dtype not in QUANT_DTYPES:
        return
    lo, hi = qrange(dtype)
    if arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
        raise err(
            f"{op}: {what} {arr.reshape(-1).tolist()} is outside the range of {dtype} [{lo}, {hi}]"
        )


def runtime_qparams(
    op: str,
    scales: Sequence[tuple[str, np.ndarray]],
    zero_points: Sequence[tuple[str, np.ndarray, str]],
) -> None:
    """Check scale and zero-point values a kernel is given (they may be computed at run
    time): :class:`~relaykit.errors.ExecutionError` naming the operator otherwise."""
    for what, s in scales:
        _check_scale_values(s, what, op, ExecutionError)
    for what, z, dtype in zero_points:
        _check_zp_values(z, dtype, what, op, ExecutionError)


def const_array(expr: Expr, what: str, op: str) -> np.ndarray:
    """The value of a quantization parameter that must be a constant (canonicalization
    computes fixed-point multipliers from it)."""
    if not isinstance(expr, Constant):
        raise IRError(
            f"{op}: {what} must be a constant to lower the operator, got "
            f"{type(expr).__name__} {_describe(expr)}"
        )
    return np.asarray(expr.data.numpy())


def _describe(expr: Expr) -> str:
    if isinstance(expr, Var):
        return f"%{expr.name_hint}"
    text = str(expr).strip().splitlines()
    return text[-1][:80] if text else ""
