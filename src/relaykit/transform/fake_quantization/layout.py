"""Rules of the operators that move, select or repeat values without computing new
ones: the integers go through unchanged with the input's affine type (``reshape``,
``transpose``, ``nn.max_pool2d``, ``strided_slice``, ``max``...), ``split`` (one type
per part), ``nn.pad`` (the pad value quantized), ``concatenate``
(``qnn.concatenate``).

A per-channel type follows its axis through ``transpose``, ``expand_dims`` and
``squeeze``, and through the operators that keep every axis (pooling, resizing); an
operator that would mix channels of a per-channel input refuses the region.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.errors import IRError
from relaykit.ir.affine_type import TensorAffineType, TupleAffineType
from relaykit.ir.expr import Call, Constant, Expr, Tuple
from relaykit.op.define import make_call
from relaykit.op.qnn import concatenate, quantize, requantize

from .registry import fold, infer_shape, op_name, register_fake_quantization_to_integer, same_affine

__all__ = ["identity_rule", "per_channel"]

# operators that keep every axis where it is (and the size of the channel axis)
_AXIS_KEEPING = (
    "nn.max_pool1d",
    "nn.max_pool2d",
    "nn.max_pool3d",
    "image.resize2d",
)
# operators whose output mixes axes: fine per tensor only
_PER_TENSOR_ONLY = (
    "reshape",
    "strided_slice",
    "nn.batch_flatten",
    "nn.depth_to_space",
    "max",
    "min",
    "broadcast_to",
    "topk",
    "take",
)


def per_channel(t: TensorAffineType) -> bool:
    """Whether ``t``'s scale or zero point is a vector of more than one entry."""
    for e in (t.scale, t.zero_point):
        value = fold(e)
        if not isinstance(value, Constant) or value.data.numpy().size > 1:
            return True
    return False


def _moved_axis(expr: Call, t: TensorAffineType, arg: Expr) -> int:
    name = op_name(expr)
    ndim = len(infer_shape(arg))
    axis = t.axis % ndim
    if name == "transpose":
        axes = expr.attrs.axes
        order = list(range(ndim))[::-1] if axes is None else [int(a) % ndim for a in axes]
        return order.index(axis)
    if name == "expand_dims":
        at = int(expr.attrs.axis)
        at = at % (ndim + 1) if at < 0 else at
        return axis + int(expr.attrs.num_newaxis) if axis >= at else axis
    if name == "squeeze":
        shape = infer_shape(arg)
        dropped = (
            [i for i, d in enumerate(shape) if d == 1]
            if expr.attrs.axis is None
            else [int(a) % ndim for a in expr.attrs.axis]
        )
        if axis in dropped:
            raise IRError("squeeze removes the channel axis of a per-channel input")
        return axis - sum(1 for d in dropped if d < axis)
    if name in _AXIS_KEEPING:
        return axis
    raise IRError(f"{name} of a per-channel quantized input is not supported")


def identity_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """The operator applied to the integers; the result has the input's affine type."""
    arg = expr.args[0]
    t: TensorAffineType = type_map[arg]
    if op_name(expr) == "topk" and str(expr.attrs.ret_type) != "values":
        raise IRError("topk: only ret_type='values' keeps the quantized values")
    if per_channel(t):
        t = TensorAffineType(t.scale, t.zero_point, t.dtype, _moved_axis(expr, t, arg))
    return [expr, t]


for _name in ("transpose", "expand_dims", "squeeze", *_AXIS_KEEPING, *_PER_TENSOR_ONLY):
    if _name != "take":
        register_fake_quantization_to_integer(_name, identity_rule)


@register_fake_quantization_to_integer("take")
def take_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``take`` of the integers (the indices are not quantized)."""
    t: TensorAffineType = type_map[expr.args[0]]
    if per_channel(t):
        raise IRError("take of a per-channel quantized input is not supported")
    return [expr, t]


@register_fake_quantization_to_integer("split")
def split_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``split``: every part has the input's type."""
    arg = expr.args[0]
    t: TensorAffineType = type_map[arg]
    ios = expr.attrs.indices_or_sections
    parts = int(ios) if isinstance(ios, int | np.integer) else len(ios) + 1
    if per_channel(t) and int(expr.attrs.axis) % len(infer_shape(arg)) == t.axis % len(
        infer_shape(arg)
    ):
        raise IRError("split along the channel axis of a per-channel input is not supported")
    return [expr, TupleAffineType([t] * parts)]


@register_fake_quantization_to_integer("nn.pad")
def pad_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``nn.pad``: the pad value brought to the input's parameters."""
    arg, value = expr.args
    t: TensorAffineType = type_map[arg]
    if value in type_map:
        v_t: TensorAffineType = type_map[value]
        if not same_affine(t, v_t):
            value = requantize(
                value,
                v_t.scale,
                v_t.zero_point,
                t.scale,
                t.zero_point,
                axis=v_t.axis,
                out_dtype=t.dtype,
            )
    elif isinstance(value, Constant) and value.data.numpy().dtype.kind == "f":
        if per_channel(t):
            raise IRError("nn.pad: a float pad value needs a per-tensor quantized input")
        value = quantize(value, t.scale, t.zero_point, out_dtype=t.dtype)
    else:
        raise IRError("nn.pad: the pad value is neither quantized nor a float constant")
    given = {k: expr.attrs[k] for k in expr.attrs}
    return [make_call("nn.pad", [arg, value], **given), t]


@register_fake_quantization_to_integer("concatenate")
def concatenate_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``concatenate`` -> ``qnn.concatenate`` into the result's parameters."""
    data = expr.args[0]
    out_t: TensorAffineType = type_map[expr]
    tuple_t = type_map.get(data)
    if not isinstance(tuple_t, TupleAffineType):
        raise IRError("concatenate: an input is not quantized")
    dtypes = {t.dtype for t in tuple_t.types}
    if len(dtypes) != 1:
        raise IRError(f"concatenate: inputs of several dtypes {sorted(dtypes)}")
    out = concatenate(
        data,
        Tuple([t.scale for t in tuple_t.types]),
        Tuple([t.zero_point for t in tuple_t.types]),
        out_t.scale,
        out_t.zero_point,
        axis=int(expr.attrs.axis),
    )
    return [out, TensorAffineType(out_t.scale, out_t.zero_point, dtypes.pop(), out_t.axis)]
