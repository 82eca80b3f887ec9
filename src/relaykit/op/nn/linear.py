"""Linear layers: the matrix products ``nn.dense``, ``nn.matmul`` and ``nn.batch_matmul``,
and ``nn.bias_add``, the bias added after them (and after convolutions): each one's
schema, type relation, reference kernel, input solver and constructor.

``nn.dense`` is ``data @ weight.T`` with a weight of shape (units, in_features).
``nn.matmul`` (TVM's ``relay.nn.matmul``) takes ``tensor_a`` as ``(..., M, K)``
(``(..., K, M)`` with ``transpose_a``) or just ``(..., K)``, and ``tensor_b`` as
``(K, N)`` (``(N, K)`` with ``transpose_b``). Its constructor builds ``nn.dense`` for the
``transpose_b`` case without ``transpose_a``, as TVM does. An unannotated ``tensor_b``
gets its shape from ``units``.

>>> from relaykit import relay
>>> a, b = relay.var("a", shape=(5, 10)), relay.var("b", shape=(5, 2))
>>> matmul(a, b, transpose_a=True).op.name
'nn.matmul'
>>> matmul(a, relay.var("w", shape=(3, 10)), transpose_b=True).op.name
'nn.dense'
>>> from relaykit.ir.attrs import Attrs
>>> from relaykit.ir.types import IncompleteType, TensorType
>>> attrs = Attrs({"axis": 1})
>>> [str(t) for t in bias_add_solve([TensorType((2, 8, 4)), IncompleteType()], attrs)]
['Tensor[(2, 8, 4), float32]', 'Tensor[(8), float32]']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import IncompleteType, TensorType, Type, check_dtype
from relaykit.op._numeric import as_out
from relaykit.op._relations import (
    broadcast_dim,
    differ,
    is_int,
    normalize_axis,
    resolve_dtype,
    tensor_arg,
)
from relaykit.op.define import (
    OpPattern,
    TypeRelError,
    default_registry,
    define_op,
    make_call,
    no_default,
)

from .operands import (
    Solved,
    acc_dtype,
    axis_vector,
    check_vector,
    dtype_attr,
    fill_input,
    known_data,
    opt_int,
    result_dtype,
    same_dtype,
)

__all__ = ["dense", "matmul", "batch_matmul", "bias_add"]


# -- nn.dense -------------------------------------------------------------------------------------


def dense_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    weight = tensor_arg(arg_types, 1, "weight")
    if data.ndim < 1:
        raise TypeRelError(f"data must have at least one dimension, got {data}")
    if weight.ndim != 2:
        raise TypeRelError(f"weight must be 2-D (units, in_features), got {weight}")
    if not (attrs.out_dtype and is_int(data.dtype) and is_int(weight.dtype)):
        same_dtype(data, weight, "data and weight")  # mixed integers (u8 x i8) need out_dtype
    units, k = weight.shape
    if differ(data.shape[-1], k):
        raise TypeRelError(
            f"data {data} has {data.shape[-1]} features but the weight {weight} expects {k} "
            "(the weight is (units, in_features))"
        )
    if attrs.units is not None and attrs.units != units:
        raise TypeRelError(f"units={attrs.units} but the weight {weight} has {units} rows")
    return TensorType((*data.shape[:-1], units), resolve_dtype(attrs.out_dtype, data.dtype))


def dense_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, weight = inputs
    out_dtype = result_dtype(attrs, data)
    acc = acc_dtype(out_dtype)
    return as_out(
        np.matmul(data.astype(acc, copy=False), weight.astype(acc, copy=False).T), out_dtype
    )


def dense_solve(arg_types: Sequence[Type], attrs: Attrs) -> Solved:
    """The weight of ``nn.dense``: ``(units, in_features)``."""
    data = known_data(arg_types)
    if data is None or not isinstance(arg_types[1], IncompleteType):
        return list(arg_types)
    if attrs.units is None:
        raise TypeRelError(
            "cannot deduce the shape of the weight of nn.dense: it has no type annotation "
            "and the call does not give units=; give units= or annotate the weight"
        )
    if data.ndim < 1:
        raise TypeRelError(f"data must have at least one dimension, got {data}")
    return fill_input(arg_types, 1, lambda: TensorType((attrs.units, data.shape[-1]), data.dtype))


define_op(
    "nn.dense",
    num_inputs=2,
    attrs={"units": no_default(), "out_dtype": ""},
    attrs_type_key="relay.attrs.DenseAttrs",
    type_rel=dense_rel,
    compute=dense_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="data @ weight.T with weight of shape (units, in_features).",
)

default_registry.set_attr("nn.dense", "FTypeSolveInputs", dense_solve)


def dense(data: Expr, weight: Expr, units: int | None = None, out_dtype: str = "") -> Call:
    """``data @ weight.T``: weight has shape (units, in_features).

    >>> from relaykit import relay
    >>> dense(relay.var("x", shape=(1, 4)), relay.var("w", shape=(8, 4)), units=8).attrs.units
    8
    """
    return make_call(
        "nn.dense", [data, weight], units=opt_int(units), out_dtype=dtype_attr(out_dtype)
    )


# -- nn.matmul ------------------------------------------------------------------------------------


def _a_dims(a: TensorType, transpose_a: bool) -> tuple[tuple[object, ...], object]:
    """The batch-and-M dims of ``tensor_a`` and its reduction dim K."""
    if transpose_a:
        if a.ndim < 2:
            raise TypeRelError(f"tensor_a must have rank >= 2 with transpose_a, got {a}")
        return (*a.shape[:-2], a.shape[-1]), a.shape[-2]
    if a.ndim < 1:
        raise TypeRelError(f"tensor_a must have at least one dimension, got {a}")
    return a.shape[:-1], a.shape[-1]


def _matmul_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    a = tensor_arg(arg_types, 0, "tensor_a")
    b = tensor_arg(arg_types, 1, "tensor_b")
    if b.ndim != 2:
        raise TypeRelError(f"tensor_b must be 2-D, got {b}")
    if a.dtype != b.dtype:
        raise TypeRelError(f"tensor_a and tensor_b must have one dtype, got {a} and {b}")
    lead, k = _a_dims(a, attrs.transpose_a)
    n, kb = (b.shape[0], b.shape[1]) if attrs.transpose_b else (b.shape[1], b.shape[0])
    if differ(k, kb):
        raise TypeRelError(
            f"reduction dimensions differ: {k} in {a} and {kb} in {b} "
            f"(transpose_a={attrs.transpose_a}, transpose_b={attrs.transpose_b})"
        )
    if attrs.units is not None and differ(attrs.units, n):
        raise TypeRelError(f"units={attrs.units} but tensor_b {b} has {n} output columns")
    return TensorType((*lead, n), resolve_dtype(attrs.out_dtype, a.dtype))


def _matmul_solve(arg_types: Sequence[Type], attrs: Attrs) -> list[Type | None]:
    """An unannotated ``tensor_b``: ``(K, units)`` (``(units, K)`` with ``transpose_b``)."""
    a, b = arg_types[0], arg_types[1]
    if not isinstance(a, TensorType) or not isinstance(b, IncompleteType):
        return list(arg_types)
    if attrs.units is None:
        raise TypeRelError(
            "cannot deduce the shape of tensor_b of nn.matmul: it has no type annotation "
            "and the call does not give units=; give units= or annotate it"
        )
    _, k = _a_dims(a, attrs.transpose_a)
    shape = (attrs.units, k) if attrs.transpose_b else (k, attrs.units)
    return [a, TensorType(shape, a.dtype)]


def _matmul_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    a, b = ins
    out_dtype = np.dtype(check_dtype(attrs.out_dtype)) if attrs.out_dtype else a.dtype
    acc = np.float64 if out_dtype.kind in "fc" else np.int64
    a = a.astype(acc)
    if attrs.transpose_a:
        a = np.swapaxes(a, -1, -2)
    b = b.astype(acc)
    return as_out(np.matmul(a, b.T if attrs.transpose_b else b), out_dtype)


define_op(
    "nn.matmul",
    num_inputs=2,
    attrs={"units": None, "out_dtype": "", "transpose_a": False, "transpose_b": False},
    attrs_type_key="relay.attrs.MatmulAttrs",
    type_rel=_matmul_rel,
    compute=_matmul_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="tensor_a @ tensor_b, either optionally transposed.",
)

default_registry.set_attr("nn.matmul", "FTypeSolveInputs", _matmul_solve)


def matmul(
    tensor_a: Expr,
    tensor_b: Expr,
    units: int | None = None,
    out_dtype: str = "",
    transpose_a: bool = False,
    transpose_b: bool = False,
) -> Call:
    """``tensor_a @ tensor_b`` (see the module docstring); ``transpose_b`` alone builds
    ``nn.dense``, whose weight is already ``(units, K)``."""
    units = None if units is None else int(units)
    out_dtype = check_dtype(out_dtype) if out_dtype else ""
    if transpose_b and not transpose_a:
        return make_call("nn.dense", [tensor_a, tensor_b], units=units, out_dtype=out_dtype)
    return make_call(
        "nn.matmul",
        [tensor_a, tensor_b],
        units=units,
        out_dtype=out_dtype,
        transpose_a=bool(transpose_a),
        transpose_b=bool(transpose_b),
    )


# -- nn.batch_matmul ------------------------------------------------------------------------------


def batch_matmul_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    a = tensor_arg(arg_types, 0, "tensor_a")
    b = tensor_arg(arg_types, 1, "tensor_b")
    if a.ndim != 3 or b.ndim != 3:
        raise TypeRelError(f"batch_matmul needs two 3-D tensors, got {a} and {b}")
    if not (attrs.out_dtype and is_int(a.dtype) and is_int(b.dtype)):
        same_dtype(a, b, "tensor_a and tensor_b")  # mixed integers (u8 x i8) need out_dtype
    ba, m, ka = (a.shape[0], a.shape[2], a.shape[1]) if attrs.transpose_a else a.shape
    bb, kb, nn = (b.shape[0], b.shape[2], b.shape[1]) if attrs.transpose_b else b.shape
    if differ(ka, kb):
        raise TypeRelError(
            f"reduction dimensions differ: {ka} in {a} and {kb} in {b} "
            f"(transpose_a={attrs.transpose_a}, transpose_b={attrs.transpose_b})"
        )
    batch = broadcast_dim(ba, bb, f"batch dimensions {ba} and {bb} differ and neither is 1")
    return TensorType((batch, m, nn), resolve_dtype(attrs.out_dtype, a.dtype))


def batch_matmul_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    a, b = inputs
    out_dtype = result_dtype(attrs, a)
    acc = acc_dtype(out_dtype)
    a = a.astype(acc, copy=False)
    b = b.astype(acc, copy=False)
    if attrs.transpose_a:
        a = a.transpose(0, 2, 1)
    if attrs.transpose_b:
        b = b.transpose(0, 2, 1)
    return as_out(np.matmul(a, b), out_dtype)


define_op(
    "nn.batch_matmul",
    num_inputs=2,
    attrs={"out_dtype": "", "transpose_a": False, "transpose_b": False},
    attrs_type_key="relay.attrs.BatchMatmulAttrs",
    type_rel=batch_matmul_rel,
    compute=batch_matmul_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Batched matrix product.",
)


def batch_matmul(
    tensor_a: Expr,
    tensor_b: Expr,
    out_dtype: str = "",
    transpose_a: bool = False,
    transpose_b: bool = True,
) -> Call:
    """Batched ``a @ b``; by default (as TVM) ``b`` is given transposed: (batch, N, K)."""
    return make_call(
        "nn.batch_matmul",
        [tensor_a, tensor_b],
        out_dtype=dtype_attr(out_dtype),
        transpose_a=bool(transpose_a),
        transpose_b=bool(transpose_b),
    )


# -- nn.bias_add ----------------------------------------------------------------------------------


def bias_add_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    bias = tensor_arg(arg_types, 1, "bias")
    axis = normalize_axis(attrs.axis, data.ndim, "bias_add axis")
    check_vector(bias, data.shape[axis], data.dtype, f"bias (for axis {axis} of {data})")
    return data


def bias_add_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, bias = inputs
    shape = [1] * data.ndim
    shape[attrs.axis % data.ndim] = bias.shape[0]
    return as_out(data + bias.reshape(shape), data.dtype)


def bias_add_solve(arg_types: Sequence[Type], attrs: Attrs) -> Solved:
    """The bias of ``nn.bias_add``: a vector as long as the data's ``axis``."""
    data = known_data(arg_types)
    if data is None:
        return list(arg_types)
    return fill_input(arg_types, 1, lambda: axis_vector(data, attrs, "bias_add"))


define_op(
    "nn.bias_add",
    num_inputs=2,
    attrs={"axis": 1},
    attrs_type_key="relay.attrs.BiasAddAttrs",
    type_rel=bias_add_rel,
    compute=bias_add_kernel,
    pattern=OpPattern.BROADCAST,
    doc="Add a 1-D bias along an axis.",
)

default_registry.set_attr("nn.bias_add", "FTypeSolveInputs", bias_add_solve)


def bias_add(data: Expr, bias: Expr, axis: int = 1) -> Call:
    """Add the 1-D ``bias`` along ``axis`` of ``data``."""
    return make_call("nn.bias_add", [data, bias], axis=int(axis))
