"""Dynamic twins of the shape operators: ``dyn.arange`` (run-time bounds) and
``dyn.one_hot`` (a run-time depth)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import INT_DTYPES, normalize_axis, resolve_dtype, tensor_arg
from relaykit.op.define import TypeRelError, make_call

from ._base import define_dyn_op

__all__ = ["one_hot"]


def _arange_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    for i, what in enumerate(("start", "stop", "step")):
        t = tensor_arg(arg_types, i, what)
        if t.ndim != 0:
            raise TypeRelError(f"arange {what} must be a scalar, got {t}")
    return TensorType((AnyDim(),), resolve_dtype(attrs.dtype, "float32", "dtype"))


def _arange_convert(v: Sequence[Any], a: Attrs) -> tuple[list[Any], dict[str, Any]]:
    start, stop, step = (np.asarray(x).item() for x in v)
    return [], {"start": start, "stop": stop, "step": step, "dtype": a.dtype}


define_dyn_op(
    "dyn.arange",
    3,
    _arange_rel,
    static="arange",
    convert=_arange_convert,
    attrs={"dtype": "float32"},
    attrs_type_key="relay.attrs.ArangeAttrs",
    value_inputs=(0, 1, 2),
    doc="Evenly spaced values in [start, stop) with run-time scalar bounds.",
)


# -- one_hot --------------------------------------------------------------------------------------


def _one_hot_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    indices = tensor_arg(arg_types, 0, "indices")
    on = tensor_arg(arg_types, 1, "on_value")
    depth = tensor_arg(arg_types, 3, "depth")
    if depth.ndim != 0 or depth.dtype not in INT_DTYPES:
        raise TypeRelError(f"depth must be an integer scalar, got {depth}")
    axis = normalize_axis(attrs.axis, indices.ndim, "one_hot axis", extra=1)
    shape = list(indices.shape)
    shape.insert(axis, AnyDim())
    return TensorType(shape, resolve_dtype(attrs.dtype, on.dtype, "dtype"))


define_dyn_op(
    "dyn.one_hot",
    4,
    _one_hot_rel,
    static="one_hot",
    convert=lambda v, a: (
        [v[0], v[1], v[2]],
        {"depth": int(np.asarray(v[3])), "axis": a.axis, "dtype": a.dtype},
    ),
    attrs={"axis": -1, "dtype": "float32"},
    value_inputs=(3,),
)


def one_hot(
    indices: Expr, on_value: Expr, off_value: Expr, depth: Expr, axis: int, dtype: str
) -> Call:
    """One-hot encoding with a run-time ``depth`` (an integer scalar)."""
    return make_call(
        "dyn.one_hot", [indices, on_value, off_value, depth], axis=int(axis), dtype=dtype
    )
