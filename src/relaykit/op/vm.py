"""``vm.*``: the shape operators of TVM's VM dialect (``relay.op.vm``).

``vm.shape_of(x)`` is the shape of ``x`` as a tensor (held on the host, whatever
device ``x`` is on) and ``vm.reshape_tensor(x, shape)`` reshapes ``x`` by a shape
tensor (again on the host); device planning keeps their shape operands there.

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 3))
>>> f = relay.Function([x], shape_of(x))
>>> relay.create_executor("debug").evaluate(f)(np.zeros((2, 3), "float32")).numpy().tolist()
[2, 3]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type

from .define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["shape_of", "reshape_tensor"]


def _shape_of_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    if len(arg_types) != 1:
        raise TypeRelError(f"vm.shape_of takes 1 input, got {len(arg_types)}")
    (x,) = arg_types
    if not isinstance(x, TensorType):
        raise TypeRelError(f"vm.shape_of takes a tensor, got {x}")
    return TensorType((len(x.shape),), attrs.get("dtype", "int64"))


def _reshape_tensor_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    if len(arg_types) != 2:
        raise TypeRelError(f"vm.reshape_tensor takes 2 inputs, got {len(arg_types)}")
    data = arg_types[0]
    if not isinstance(data, TensorType):
        raise TypeRelError(f"vm.reshape_tensor takes a tensor, got {data}")
    return TensorType(tuple(attrs.get("newshape") or ()), data.dtype)


define_op(
    "vm.shape_of",
    num_inputs=1,
    attrs={"dtype": "int64"},
    attrs_type_key="relay.attrs.ShapeOfAttrs",
    type_rel=_shape_of_rel,
    compute=lambda args, attrs: np.asarray(np.shape(args[0]), dtype=attrs.get("dtype", "int64")),
    pattern=OpPattern.OPAQUE,
    doc="The shape of a tensor, as a tensor on the host.",
)
define_op(
    "vm.reshape_tensor",
    num_inputs=2,
    attrs={"newshape": ()},
    attrs_type_key="relay.attrs.ReshapeTensorAttrs",
    type_rel=_reshape_tensor_rel,
    compute=lambda args, attrs: np.reshape(
        args[0], tuple(int(d) for d in np.asarray(args[1]).reshape(-1))
    ),
    pattern=OpPattern.OPAQUE,
    doc="A tensor reshaped by a shape tensor (on the host).",
)


def shape_of(x: Expr, dtype: str = "int64") -> Call:
    """``vm.shape_of``: the shape of ``x`` as a ``dtype`` tensor."""
    return make_call("vm.shape_of", [x], dtype=dtype)


def reshape_tensor(data: Expr, shape: Expr, newshape: Sequence[int]) -> Call:
    """``vm.reshape_tensor``: ``data`` reshaped to ``shape`` (whose static value is
    ``newshape``)."""
    return make_call("vm.reshape_tensor", [data, shape], newshape=tuple(int(d) for d in newshape))
