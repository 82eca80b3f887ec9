"""Vectorised numeric helpers for the reference kernels (NumPy; special functions from
``scipy.special``).

>>> float(erf(np.array(1.0)))  # doctest: +ELLIPSIS
0.84270079294971...
>>> round_half_away(np.array([0.5, 1.5, -2.5])).tolist()
[1.0, 2.0, -3.0]
>>> trunc_divide(np.array([-7, 7]), np.array([2, -2])).tolist()
[-3, -3]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.special as _special

__all__ = [
    "as_out",
    "erf",
    "round_half_away",
    "trunc_divide",
    "trunc_mod",
    "lowest_value",
    "lowest_finite",
]


def as_out(value: Any, dtype: Any) -> np.ndarray:
    """``value`` as an ndarray of ``dtype`` (NumPy returns scalars for 0-d inputs)."""
    arr = np.asarray(value)
    if arr.dtype != dtype:
        arr = arr.astype(dtype)
    return arr


def erf(x: np.ndarray) -> np.ndarray:
    """The Gauss error function: ``scipy.special.erf`` (Cephes), within a few ulps of the
    input's float type (float64: |err| < 1e-15; float32: one float32 ulp).

    Integers and float16 are computed in the smallest float type scipy has for them;
    callers cast the result to the output type.
    """
    return np.asarray(_special.erf(x))


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round to nearest, halves away from zero (C ``round``, as TVM's ``round``)."""
    if x.dtype.kind != "f":
        return x
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype, copy=False)


def trunc_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounding toward zero (C semantics, as TVM's ``divide``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.floor_divide(a, b)
        r = a - q * b
        fix = (r != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def trunc_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Remainder with the sign of the dividend (C ``%``, as TVM's ``mod``)."""
    if np.asarray(a).dtype.kind == "f":
        return np.fmod(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(a, b)


def lowest_finite(dtype: Any) -> Any:
    """The lowest finite value of ``dtype`` (TVM's ``min_value``): what max pooling pads
    with, so a window of padding alone gives this value, not ``-inf``."""
    dt = np.dtype(dtype)
    return np.finfo(dt).min if dt.kind == "f" else lowest_value(dt)


def lowest_value(dtype: Any) -> Any:
    """The identity of ``max``: ``-inf`` for floats, the minimum for integers."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return -np.inf
    if dt.kind == "b":
        return False
    return np.iinfo(dt).min
