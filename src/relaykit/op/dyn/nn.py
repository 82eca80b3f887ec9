"""``relay.op.dyn.nn``: ``dyn.nn.pad`` with run-time pad widths."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import INT_DTYPES, tensor_arg
from relaykit.op.define import TypeRelError, make_call

from ._base import define_dyn_op, unknown

__all__ = ["pad"]


def _pad_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    width = tensor_arg(arg_types, 1, "pad_width")
    value = tensor_arg(arg_types, 2, "pad_value")
    if width.dtype not in INT_DTYPES or width.ndim != 2 or width.shape[1] not in (2,):
        raise TypeRelError(f"pad_width must be an integer tensor of shape (rank, 2), got {width}")
    if isinstance(width.shape[0], int) and width.shape[0] != data.ndim:
        raise TypeRelError(f"pad_width {width} needs one (before, after) row per axis of {data}")
    if value.ndim != 0:
        raise TypeRelError(f"pad_value must be a scalar, got {value}")
    return TensorType(unknown(data.ndim), data.dtype)


def _pad_convert(v: Sequence[Any], a: Attrs) -> tuple[list[Any], dict[str, Any]]:
    width = tuple(tuple(int(x) for x in row) for row in np.asarray(v[1]).reshape(-1, 2))
    return [v[0], v[2]], {"pad_width": width, "pad_mode": a.pad_mode}


define_dyn_op(
    "dyn.nn.pad",
    "nn.pad",
    3,
    _pad_rel,
    _pad_convert,
    attrs={"pad_mode": "constant"},
    value_inputs=(1,),
    doc="nn.pad with run-time pad widths (a (rank, 2) integer tensor).",
)


def pad(data: Expr, pad_width: Expr, pad_value: Any = 0.0, pad_mode: str = "constant") -> Call:
    """``data`` padded by the run-time ``pad_width`` (rank x 2 integers)."""
    if not isinstance(pad_value, Expr):
        pad_value = Constant(np.asarray(pad_value, dtype="float32"))
    return make_call("dyn.nn.pad", [data, pad_width, pad_value], pad_mode=pad_mode)
