"""Dynamic twins of the tensor initialisers: ``dyn.full``, ``dyn.zeros`` and
``dyn.ones`` with a run-time shape."""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import resolve_dtype, tensor_arg
from relaykit.op.define import TypeRelError, make_call

from ._base import define_dyn_op, ints, shape_input, unknown

__all__ = ["full", "ones", "zeros"]


def _full_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    fill = tensor_arg(arg_types, 0, "fill_value")
    if fill.ndim != 0:
        raise TypeRelError(f"fill_value must be a scalar, got {fill}")
    rank = shape_input(arg_types, 1, "shape")
    return TensorType(unknown(rank), resolve_dtype(attrs.dtype, fill.dtype, "dtype"))


define_dyn_op(
    "dyn.full",
    2,
    _full_rel,
    static="full",
    convert=lambda v, a: ([v[0]], {"shape": ints(v[1]), "dtype": a.dtype}),
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
        1,
        _init_rel,
        static=_name,
        convert=lambda v, a: ([], {"shape": ints(v[0]), "dtype": a.dtype or "float32"}),
        attrs={"dtype": "float32"},
        value_inputs=(0,),
    )


def zeros(shape: Expr, dtype: str = "float32") -> Call:
    """Zeros of the run-time ``shape``."""
    return make_call("dyn.zeros", [shape], dtype=dtype)


def ones(shape: Expr, dtype: str = "float32") -> Call:
    """Ones of the run-time ``shape``."""
    return make_call("dyn.ones", [shape], dtype=dtype)


del _name
