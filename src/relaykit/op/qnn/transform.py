"""Quantized transform operators (TVM's ``relay.qnn.op``): ``qnn.concatenate``.

A quantized tensor holds integers ``q`` standing for ``scale * (q - zero_point)``.
``qnn.concatenate`` joins tensors quantized with their own scales and zero points and
requantizes each input whose parameters differ to ``output_scale`` /
``output_zero_point`` (TVM's integer requantize, clipped to the dtype's range), as
TVM's lowering does.

>>> import numpy as np
>>> from relaykit import relay
>>> a = relay.var("a", shape=(1, 2), dtype="uint8")
>>> s, z = relay.const(0.5), relay.const(0, "int32")
>>> y = concatenate((a, a), (s, s), (z, z), relay.const(1.0), z, axis=1)
>>> y.op.name
'qnn.concatenate'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, Tuple, TupleWrapper
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import tensor_arg, tuple_arg
from relaykit.op.define import OpPattern, TypeRelError, default_registry, define_op, make_call

from ._common import requantize_values

__all__ = ["concatenate"]


def _scalar(t: Type, dtype: str, what: str) -> None:
    if not isinstance(t, TensorType) or t.dtype != dtype or any(d != 1 for d in t.shape):
        raise TypeRelError(f"{what} must be a {dtype} scalar, got {t}")


def _qnn_concat_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tuple_arg(arg_types, 0, "the input of qnn.concatenate")
    scales = tuple_arg(arg_types, 1, "input_scales")
    zps = tuple_arg(arg_types, 2, "input_zero_points")
    n = len(data.fields)
    if len(scales.fields) != n or len(zps.fields) != n:
        raise TypeRelError(
            f"qnn.concatenate of {n} tensors needs {n} input scales and zero points, got "
            f"{len(scales.fields)} and {len(zps.fields)}"
        )
    for i in range(n):
        _scalar(scales.fields[i], "float32", f"input scale {i}")
        _scalar(zps.fields[i], "int32", f"input zero point {i}")
    _scalar(tensor_arg(arg_types, 3, "output_scale"), "float32", "output_scale")
    _scalar(tensor_arg(arg_types, 4, "output_zero_point"), "int32", "output_zero_point")
    concat = default_registry.get("concatenate").get_attr("FTypeRelation")
    return concat([data], attrs)


def _qnn_concat(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
    data, scales, zps, out_scale, out_zp = inputs
    os, oz = np.asarray(out_scale), np.asarray(out_zp)
    dtype = str(np.asarray(data[0]).dtype)
    parts = []
    for x, s, z in zip(data, scales, zps, strict=True):
        s, z = np.asarray(s), np.asarray(z)
        if np.array_equal(s, os) and np.array_equal(z, oz):
            parts.append(np.asarray(x))
        else:
            parts.append(requantize_values(x, s, z, os, oz, -1, "UPWARD", "int64", dtype))
    return np.concatenate(parts, axis=int(attrs.axis))


define_op(
    "qnn.concatenate",
    num_inputs=5,
    attrs={"axis": 0},
    attrs_type_key="relay.attrs.ConcatenateAttrs",
    type_rel=_qnn_concat_rel,
    compute=_qnn_concat,
    pattern=OpPattern.OPAQUE,
    doc="Concatenate quantized tensors, requantized to one scale and zero point.",
)


def _tuple(value: Any) -> Expr:
    if isinstance(value, TupleWrapper):
        return value.astuple()
    return value if isinstance(value, Expr) else Tuple(list(value))


def concatenate(
    data: Any,
    input_scales: Any,
    input_zero_points: Any,
    output_scale: Expr,
    output_zero_point: Expr,
    axis: int,
) -> Call:
    """TVM's ``relay.qnn.op.concatenate``: ``data``, ``input_scales`` and
    ``input_zero_points`` are tuples (or lists) of one entry per tensor."""
    return make_call(
        "qnn.concatenate",
        [
            _tuple(data),
            _tuple(input_scales),
            _tuple(input_zero_points),
            output_scale,
            output_zero_point,
        ],
        axis=int(axis),
    )
