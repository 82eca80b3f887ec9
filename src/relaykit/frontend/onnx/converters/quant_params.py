"""Reading and checking the quantization parameters of an ONNX node (scales and zero
points) before they become the constant arguments of QNN operators.

A scale is a float scalar or a vector of one entry per channel along the node's axis; it
must be finite and positive. A zero point has the shape of its scale and the integer
dtype of the quantized tensor, and its values must lie within that dtype. A bad one is a
:class:`~relaykit.errors.FrontendError` naming the node, never silently clipped.

>>> import numpy as np
>>> check_scale_values(np.array([0.5, 0.25], "float32"), "w_scale", "node 'c' (QLinearConv)")
>>> check_scale_values(np.array([0.0]), "w_scale", "node 'c' (QLinearConv)")
Traceback (most recent call last):
...
relaykit.errors.FrontendError: node 'c' (QLinearConv): w_scale must be finite and positive, \
got [0.0] at index 0; a scale of 0, a negative or a non-finite one has no quantized meaning
"""

from __future__ import annotations

import numpy as np

from relaykit.errors import FrontendError
from relaykit.frontend.onnx.registry import NodeContext
from relaykit.ir.expr import Constant, Expr

__all__ = [
    "QNN_DTYPES",
    "QParams",
    "check_scale_values",
    "const_qparams",
    "is_const",
    "require_const",
]

#: the integer dtypes the QNN operators take (quantized tensors and zero points)
QNN_DTYPES = ("int8", "uint8", "int16", "uint16", "int32")


class QParams:
    """A checked (scale, zero point) pair as QNN constants: ``scale`` float32 and
    ``zero_point`` int32, each a scalar or a vector of ``channels`` entries (or an int32
    scalar expression for a zero point known only at run time)."""

    __slots__ = ("scale", "zero_point", "scale_values", "zp_values")

    def __init__(
        self, scale: np.ndarray, zero_point: np.ndarray, zero_point_expr: Expr | None = None
    ) -> None:
        self.scale_values = scale
        self.zp_values = zero_point
        self.scale: Expr = Constant(np.array(scale, np.float32))
        #: ``zero_point_expr`` when given: a zero point computed at run time
        self.zero_point: Expr = (
            zero_point_expr
            if zero_point_expr is not None
            else Constant(np.array(zero_point, np.int32))
        )

    @property
    def per_channel(self) -> bool:
        return self.scale_values.size > 1 or self.zp_values.size > 1


def is_const(*exprs: Expr | None) -> bool:
    """Whether every given input is a constant (missing optional inputs count as such)."""
    return all(e is None or isinstance(e, Constant) for e in exprs)


def require_const(ctx: NodeContext, expr: Expr | None, what: str) -> np.ndarray:
    """The constant value of a quantization parameter ``what`` that this node's QNN
    operator needs at compile time; a run-time value is a FrontendError naming the node."""
    if expr is None:
        raise ctx.fail(f"its {what} input is missing")
    if not isinstance(expr, Constant):
        raise ctx.fail(
            f"its {what} is computed at run time, but the quantized operator needs it as a "
            "constant (its requantization multiplier is fixed at compile time); make it an "
            "initializer or a Constant node"
        )
    return np.asarray(expr.data.numpy())


def check_scale_values(values: np.ndarray, what: str, where: str) -> None:
    """Scales must be finite and positive."""
    arr = np.asarray(values, np.float64).reshape(-1)
    bad = np.flatnonzero(~np.isfinite(arr) | ~(arr > 0))
    if arr.size == 0 or bad.size:
        at = f" at index {int(bad[0])}" if bad.size else ""
        raise FrontendError(
            f"{where}: {what} must be finite and positive, got {arr[:8].tolist()}{at}; a scale "
            "of 0, a negative or a non-finite one has no quantized meaning"
        )


def _check_shape(ctx: NodeContext, arr: np.ndarray, what: str, channels: int | None) -> None:
    if arr.ndim == 0 or arr.size == 1:
        return
    if arr.ndim != 1:
        raise ctx.fail(
            f"{what} must be a scalar or a 1-D tensor (per axis), got shape {list(arr.shape)}; "
            "blocked quantization (a parameter per block of the axis) needs the block_size "
            "attribute of QuantizeLinear / DequantizeLinear and is not taken by quantized "
            "operators"
        )
    if channels is None:
        raise ctx.fail(f"{what} must be a scalar (per tensor) here, got shape {list(arr.shape)}")
    if arr.shape[0] != channels:
        raise ctx.fail(
            f"{what} has {arr.shape[0]} entries but the quantized axis has {channels} "
            "channels; give one entry per channel or a single value"
        )


def const_qparams(
    ctx: NodeContext,
    scale: Expr | None,
    zero_point: Expr | None,
    dtype: str,
    what: str,
    channels: int | None = None,
) -> QParams:
    """The checked constant scale and zero point of the quantized tensor ``what`` of
    ``dtype`` (``channels``: the size of the axis a 1-D parameter runs along, or ``None``
    when only a per-tensor one is allowed). A missing zero point is 0."""
    s = require_const(ctx, scale, f"{what} scale")
    if s.dtype.kind != "f":
        raise ctx.fail(f"the {what} scale must be a float tensor, got {s.dtype}")
    _check_shape(ctx, s, f"the {what} scale", channels)
    check_scale_values(s, f"the {what} scale", ctx.where)
    if zero_point is None:
        z = np.zeros(s.shape, np.int64)
    else:
        z = require_const(ctx, zero_point, f"{what} zero point")
        if z.dtype.kind not in "iu":
            raise ctx.fail(f"the {what} zero point must be an integer tensor, got {z.dtype}")
        _check_zp_range(ctx, z, dtype, what)
        if dtype != str(z.dtype):
            raise ctx.fail(
                f"the {what} zero point is {z.dtype} but the quantized tensor is {dtype}; "
                "they must have the same dtype"
            )
        _check_shape(ctx, z, f"the {what} zero point", channels)
        if z.size != s.size and z.size != 1 and s.size != 1:
            raise ctx.fail(
                f"the {what} scale has {s.size} entries but its zero point {z.size}; give them "
                "the same shape"
            )
    _check_zp_range(ctx, z, dtype, what)
    return QParams(s.reshape(-1) if s.size > 1 else s.reshape(()), _flat(z))


def _flat(z: np.ndarray) -> np.ndarray:
    return z.reshape(-1).astype(np.int64) if z.size > 1 else z.reshape(()).astype(np.int64)


def _check_zp_range(ctx: NodeContext, z: np.ndarray, dtype: str, what: str) -> None:
    if dtype not in QNN_DTYPES:
        raise ctx.fail(f"the {what} tensor is {dtype}; quantized operators take {QNN_DTYPES}")
    info = np.iinfo(np.dtype(dtype))
    vals = np.asarray(z, np.int64).reshape(-1)
    bad = np.flatnonzero((vals < info.min) | (vals > info.max))
    if bad.size:
        raise ctx.fail(
            f"the {what} zero point {int(vals[bad[0]])} is outside the range of {dtype} "
            f"[{info.min}, {info.max}]"
        )
