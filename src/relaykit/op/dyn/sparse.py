"""``dyn.sparse_to_dense``: :func:`relaykit.op.sparse.sparse_to_dense` with the output
shape given at run time (a 1-D integer tensor)."""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import INT_DTYPES, tensor_arg
from relaykit.op.define import TypeRelError, make_call

from ._base import define_dyn_op, ints, shape_input, unknown

__all__ = ["sparse_to_dense"]


def _sparse_to_dense_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    idx = tensor_arg(arg_types, 0, "sparse_indices")
    values = tensor_arg(arg_types, 2, "sparse_values")
    default = tensor_arg(arg_types, 3, "default_value")
    if idx.dtype not in INT_DTYPES or idx.ndim > 2:
        raise TypeRelError(f"sparse_indices must be an integer tensor of rank <= 2, got {idx}")
    if values.ndim > 1:
        raise TypeRelError(f"sparse_values must have rank 0 or 1, got {values}")
    if default.ndim != 0:
        raise TypeRelError(f"default_value must be a scalar, got {default}")
    return TensorType(unknown(shape_input(arg_types, 1, "output_shape")), values.dtype)


define_dyn_op(
    "dyn.sparse_to_dense",
    4,
    _sparse_to_dense_rel,
    static="sparse_to_dense",
    convert=lambda v, a: ([v[0], v[2], v[3]], {"output_shape": ints(v[1])}),
    value_inputs=(1,),
)


def sparse_to_dense(
    sparse_indices: Expr, output_shape: Expr, sparse_values: Expr, default_value: Expr
) -> Call:
    """The dense tensor of the run-time ``output_shape`` holding ``sparse_values`` at
    ``sparse_indices`` and ``default_value`` elsewhere."""
    return make_call(
        "dyn.sparse_to_dense", [sparse_indices, output_shape, sparse_values, default_value]
    )
