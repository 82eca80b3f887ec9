"""Dynamic twin of ``topk``: ``dyn.topk`` with a run-time ``k``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op._relations import (
    FLOAT_DTYPES,
    INT_DTYPES,
    normalize_axis,
    resolve_dtype,
    tensor_arg,
)
from relaykit.op.define import TypeRelError, make_call

from ._base import define_dyn_op

__all__ = ["topk"]


def _topk_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    k = tensor_arg(arg_types, 1, "k")
    single = k.ndim == 0 or (k.ndim == 1 and str(k.shape[0]) == "1")
    if not single or not (k.dtype in INT_DTYPES or k.dtype in FLOAT_DTYPES):
        raise TypeRelError(f"k must be a number: a scalar or a one-element tensor, got {k}")
    axis = normalize_axis(attrs.axis, data.ndim, "topk axis")
    shape = list(data.shape)
    shape[axis] = AnyDim()
    values = TensorType(shape, data.dtype)
    indices = TensorType(shape, resolve_dtype(attrs.dtype, "int32", "dtype"))
    if attrs.ret_type == "values":
        return values
    if attrs.ret_type == "indices":
        return indices
    return TupleType([values, indices])


define_dyn_op(
    "dyn.topk",
    2,
    _topk_rel,
    static="topk",
    convert=lambda v, a: (
        [v[0]],
        {
            "k": int(np.asarray(v[1]).reshape(-1)[0]),
            "axis": a.axis,
            "ret_type": a.ret_type,
            "is_ascend": a.is_ascend,
            "dtype": a.dtype,
        },
    ),
    attrs={"axis": -1, "ret_type": "both", "is_ascend": False, "dtype": "int32"},
    value_inputs=(1,),
)


def topk(
    data: Expr,
    k: Expr,
    axis: int = -1,
    ret_type: str = "both",
    is_ascend: bool = False,
    dtype: str = "int32",
) -> Call:
    """The ``k`` (a run-time scalar) largest (or smallest) entries along ``axis``."""
    return make_call(
        "dyn.topk",
        [data, k],
        axis=int(axis),
        ret_type=ret_type,
        is_ascend=bool(is_ascend),
        dtype=dtype,
    )
