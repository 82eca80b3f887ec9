"""Dynamic operators (``relay.op.dyn``): shapes, axes, counts and sizes given at run time.

Each ``dyn.X`` takes as tensor inputs what its static twin ``X`` takes as attributes
(``dyn.reshape(data, newshape)`` vs ``reshape(data, newshape=(2, 3))``). Its type has ``?``
dimensions where the value decides the size; the rank comes from the static length of the
shape-like input. Each has

* a NumPy kernel: the static op's kernel, called with the values made attributes;
* a data-dependent shape function (``FShapeFunc`` with ``TShapeDataDependent=True``,
  see :mod:`relaykit.op.shape_func`): the static op's output shape for those values;
* a fold back to the static op when the inputs are constants
  (:func:`static_equivalent`, used by ``relay.transform.DynamicToStatic``).

The ordinary constructors dispatch here when given an expression instead of numbers, as
TVM's Python API does: ``relay.reshape(x, newshape=relay_expr)`` builds ``dyn.reshape``;
a ``relay.Constant`` is read as the numbers it holds and builds the static op.

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 6))
>>> s = relay.var("s", shape=(2,), dtype="int64")
>>> call = relay.reshape(x, s)
>>> call.op.name
'dyn.reshape'
>>> f = relay.Function([x, s], call)
>>> out = relay.create_executor("debug").evaluate(f)(np.ones((2, 6), "float32"), np.array([3, 4]))
>>> out.shape
(3, 4)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op._relations import INT_DTYPES, normalize_axis, resolve_dtype, tensor_arg
from relaykit.op.define import TypeRelError, make_call

from . import image, nn
from ._base import DYN_OPS, define_dyn_op, ints, shape_input, static_equivalent, unknown
from .reduce import REDUCTIONS, cumulative, reduce, sum_
from .signal import dft, stft, window
from .transform import (
    as_dynamic,
    center_crop_pad,
    compress,
    dropout,
    expand,
    matmul,
    pad_axes,
    slice_axes,
    split,
    unique,
    unsqueeze,
)
from .vision import affine_grid, col2im, image_resize, non_max_suppression

__all__ = [
    "DYN_OPS",
    "broadcast_to",
    "expand_dims",
    "full",
    "one_hot",
    "ones",
    "reshape",
    "squeeze",
    "static_equivalent",
    "strided_slice",
    "tile",
    "topk",
    "zeros",
    "image",
    "nn",
    # operators ONNX models need with run-time axes, extents or data-dependent outputs
    "REDUCTIONS",
    "affine_grid",
    "as_dynamic",
    "center_crop_pad",
    "col2im",
    "compress",
    "cumulative",
    "dft",
    "dropout",
    "expand",
    "image_resize",
    "matmul",
    "non_max_suppression",
    "pad_axes",
    "reduce",
    "slice_axes",
    "split",
    "stft",
    "sum_",
    "unique",
    "unsqueeze",
    "window",
]

# -- reshape, broadcast_to, tile ------------------------------------------------------------------


def _reshape_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(unknown(shape_input(arg_types, 1, "newshape")), data.dtype)


define_dyn_op(
    "dyn.reshape",
    "reshape",
    2,
    _reshape_rel,
    lambda v, a: ([v[0]], {"newshape": ints(v[1]), "allowzero": bool(a.allowzero)}),
    attrs={"allowzero": False},
    value_inputs=(1,),
)


def reshape(data: Expr, newshape: Expr, allowzero: bool = False) -> Call:
    """``data`` reshaped to the run-time shape ``newshape`` (1-D int tensor), with
    reshape's special values (0 copies, -1 infers)."""
    return make_call("dyn.reshape", [data, newshape], allowzero=bool(allowzero))


def _broadcast_to_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(unknown(shape_input(arg_types, 1, "shape")), data.dtype)


define_dyn_op(
    "dyn.broadcast_to",
    "broadcast_to",
    2,
    _broadcast_to_rel,
    lambda v, a: ([v[0]], {"shape": ints(v[1])}),
    value_inputs=(1,),
)


def broadcast_to(data: Expr, shape: Expr) -> Call:
    """``data`` broadcast to the run-time ``shape``."""
    return make_call("dyn.broadcast_to", [data, shape])


def _tile_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(unknown(max(data.ndim, shape_input(arg_types, 1, "reps"))), data.dtype)


define_dyn_op(
    "dyn.tile",
    "tile",
    2,
    _tile_rel,
    lambda v, a: ([v[0]], {"reps": ints(v[1])}),
    value_inputs=(1,),
)


def tile(data: Expr, reps: Expr) -> Call:
    """``data`` repeated ``reps`` times per axis (run-time ``reps``)."""
    return make_call("dyn.tile", [data, reps])


# -- strided_slice --------------------------------------------------------------------------------


def _strided_slice_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    for i, what in ((1, "begin"), (2, "end"), (3, "strides")):
        shape_input(arg_types, i, what)
    return TensorType(unknown(data.ndim), data.dtype)


def _slice_attrs(v: Sequence[Any], a: Attrs) -> tuple[list[Any], dict[str, Any]]:
    return [v[0]], {
        "begin": ints(v[1]),
        "end": ints(v[2]),
        "strides": ints(v[3]),
        "slice_mode": a.slice_mode,
        "axes": None,
    }


define_dyn_op(
    "dyn.strided_slice",
    "strided_slice",
    4,
    _strided_slice_rel,
    _slice_attrs,
    attrs={"slice_mode": "end"},
    value_inputs=(1, 2, 3),
)


def strided_slice(
    data: Expr, begin: Expr, end: Expr, strides: Expr, slice_mode: str = "end"
) -> Call:
    """A strided slice whose ``begin``, ``end`` and ``strides`` are run-time vectors."""
    return make_call("dyn.strided_slice", [data, begin, end, strides], slice_mode=slice_mode)


# -- topk -----------------------------------------------------------------------------------------


def _topk_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    k = tensor_arg(arg_types, 1, "k")
    if k.ndim != 0 or k.dtype not in INT_DTYPES:
        raise TypeRelError(f"k must be an integer scalar, got {k}")
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
    "topk",
    2,
    _topk_rel,
    lambda v, a: (
        [v[0]],
        {
            "k": int(np.asarray(v[1])),
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


# -- full, zeros, ones ----------------------------------------------------------------------------


def _full_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    fill = tensor_arg(arg_types, 0, "fill_value")
    if fill.ndim != 0:
        raise TypeRelError(f"fill_value must be a scalar, got {fill}")
    rank = shape_input(arg_types, 1, "shape")
    return TensorType(unknown(rank), resolve_dtype(attrs.dtype, fill.dtype, "dtype"))


define_dyn_op(
    "dyn.full",
    "full",
    2,
    _full_rel,
    lambda v, a: ([v[0]], {"shape": ints(v[1]), "dtype": a.dtype}),
    attrs={"dtype": ""},
    value_inputs=(1,),
)


def full(fill_value: Expr, shape: Expr, dtype: str = "") -> Call:
    """A tensor of the run-time ``shape`` filled with the scalar ``fill_value``."""
    return make_call("dyn.full", [fill_value, shape], dtype=dtype)


def _init_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    rank = shape_input(arg_types, 0, "shape")
    return TensorType(unknown(rank), resolve_dtype(attrs.dtype, "float32", "dtype"))


for _name in ("zeros", "ones"):
    define_dyn_op(
        f"dyn.{_name}",
        _name,
        1,
        _init_rel,
        lambda v, a: ([], {"shape": ints(v[0]), "dtype": a.dtype or "float32"}),
        attrs={"dtype": "float32"},
        value_inputs=(0,),
    )


def zeros(shape: Expr, dtype: str = "float32") -> Call:
    """Zeros of the run-time ``shape``."""
    return make_call("dyn.zeros", [shape], dtype=dtype)


def ones(shape: Expr, dtype: str = "float32") -> Call:
    """Ones of the run-time ``shape``."""
    return make_call("dyn.ones", [shape], dtype=dtype)


# -- expand_dims, squeeze -------------------------------------------------------------------------


def _expand_dims_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    axis = tensor_arg(arg_types, 1, "axis")
    if axis.ndim != 0 or axis.dtype not in INT_DTYPES:
        raise TypeRelError(f"axis must be an integer scalar, got {axis}")
    return TensorType(unknown(data.ndim + int(attrs.num_newaxis)), data.dtype)


define_dyn_op(
    "dyn.expand_dims",
    "expand_dims",
    2,
    _expand_dims_rel,
    lambda v, a: ([v[0]], {"axis": int(np.asarray(v[1])), "num_newaxis": a.num_newaxis}),
    attrs={"num_newaxis": 1},
    value_inputs=(1,),
)


def expand_dims(data: Expr, axis: Expr, num_newaxis: int = 1) -> Call:
    """``data`` with ``num_newaxis`` new axes at the run-time ``axis``."""
    return make_call("dyn.expand_dims", [data, axis], num_newaxis=int(num_newaxis))


def _squeeze_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n = shape_input(arg_types, 1, "axis")
    if n > data.ndim:
        raise TypeRelError(f"cannot squeeze {n} axes of {data}")
    return TensorType(unknown(data.ndim - n), data.dtype)


define_dyn_op(
    "dyn.squeeze",
    "squeeze",
    2,
    _squeeze_rel,
    lambda v, a: ([v[0]], {"axis": ints(v[1])}),
    value_inputs=(1,),
)


def squeeze(data: Expr, axis: Expr) -> Call:
    """``data`` without the run-time list of size-1 ``axis``."""
    return make_call("dyn.squeeze", [data, axis])


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
    "one_hot",
    4,
    _one_hot_rel,
    lambda v, a: (
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
