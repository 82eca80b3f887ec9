"""Helpers shared by the ONNX converters: padding rules, scalars, axes.

>>> resolve_pads("SAME_UPPER", (5,), (3,), (2,), (1,), ())
(1, 1)
>>> resolve_pads("NOTSET", (5,), (3,), (1,), (1,), (1, 0))
(1, 0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.registry import NodeContext
from relaykit.ir.expr import Constant, Expr

__all__ = [
    "static_reshape",
    "round_half_to_even",
    "resolve_pads",
    "scalar",
    "normalize_axis",
    "flatten_to_2d",
    "to_float",
    "relu_like",
]


def resolve_pads(
    auto_pad: str,
    in_sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
    ceil_mode: bool = False,
) -> tuple[int, ...]:
    """ONNX ``pads`` (all begins, then all ends) with ``auto_pad`` applied."""
    n = len(in_sizes)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begins, ends = [], []
        for i in range(n):
            out = math.ceil(in_sizes[i] / strides[i])
            eff = (kernel[i] - 1) * dilations[i] + 1
            total = max(0, (out - 1) * strides[i] + eff - in_sizes[i])
            small, big = total // 2, total - total // 2
            if auto_pad == "SAME_UPPER":
                begins.append(small)
                ends.append(big)
            else:
                begins.append(big)
                ends.append(small)
        return tuple(begins + ends)
    if auto_pad == "VALID" or not pads:
        return (0,) * (2 * n)
    return tuple(int(p) for p in pads)


def scalar(value: Any, dtype: str) -> Constant:
    """A rank-0 constant of ``dtype``."""
    return Constant(np.asarray(value, dtype=dtype))


def normalize_axis(ctx: NodeContext, axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ctx.fail(f"axis {axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim if ndim else 0


def flatten_to_2d(ctx: NodeContext, x: Expr, axis: int) -> Expr:
    """``x`` reshaped to (prod(shape[:axis]), prod(shape[axis:]))."""
    shape = ctx.shape(x)
    axis = axis % len(shape) if shape and axis < 0 else axis
    rows = int(np.prod(shape[:axis], dtype=np.int64))
    cols = int(np.prod(shape[axis:], dtype=np.int64))
    return op.reshape(x, (rows, cols))


def to_float(ctx: NodeContext, x: Expr) -> tuple[Expr, str]:
    """``x`` cast to float32 unless already floating; and its original dtype."""
    dtype = ctx.dtype(x)
    if dtype.startswith("float"):
        return x, dtype
    return op.cast(x, "float32"), dtype


def relu_like(ctx: NodeContext, x: Expr) -> Expr:
    """``max(x, 0)`` for any dtype."""
    if ctx.dtype(x).startswith("float"):
        return op.nn.relu(x)
    return op.maximum(x, scalar(0, ctx.dtype(x)))


def static_reshape(x: Expr, shape: Sequence[int]) -> Expr:
    """``reshape`` to a concrete shape (a 0 is a zero-sized axis, not "copy")."""
    dims = tuple(int(d) for d in shape)
    return op.reshape(x, dims, allowzero=0 in dims)


def round_half_to_even(ctx: NodeContext, x: Expr) -> Expr:
    """ONNX's rounding (halves to the even neighbour), built from ``floor``."""
    dt = ctx.dtype(x)
    half, one, two = scalar(0.5, dt), scalar(1, dt), scalar(2, dt)
    f = op.floor(op.add(x, half))
    tie = op.equal(op.subtract(f, x), half)
    odd = op.not_equal(op.floor_mod(f, two), scalar(0, dt))
    return op.where(op.logical_and(tie, odd), op.subtract(f, one), f)
