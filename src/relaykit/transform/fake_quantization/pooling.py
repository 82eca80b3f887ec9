"""Rules of averaging operators: ``nn.avg_pool2d`` (``qnn.avg_pool2d``),
``nn.global_avg_pool2d`` and ``nn.adaptive_avg_pool1d/2d`` (the input requantized in
int32 to a step ``2**k`` times finer than the result's, averaged, then requantized to the
result: one rounding that matters, as the float graph has), ``mean`` (an int32 sum requantized, so
the one rounding is the final one), and the optional ``nn.softmax`` (``qnn.softmax``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.errors import IRError
from relaykit.ir.affine_type import TensorAffineType
from relaykit.ir.expr import Call, Constant, Expr, const
from relaykit.op.define import make_call
from relaykit.op.qnn import avg_pool2d, requantize, softmax

from .elementwise import fine_shift
from .layout import per_channel
from .registry import (
    fold,
    infer_shape,
    op_name,
    register_fake_quantization_to_integer,
    register_optional_fake_quantization_to_integer,
    same_affine,
    scalar_value,
)

__all__ = ["avg_pool2d_rule", "int32_pool_rule", "mean_rule", "softmax_rule"]


@register_fake_quantization_to_integer("nn.avg_pool2d")
def avg_pool2d_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``nn.avg_pool2d`` -> ``qnn.avg_pool2d`` into the result's parameters."""
    arg = expr.args[0]
    t: TensorAffineType = type_map[arg]
    out_t: TensorAffineType = type_map[expr]
    a = expr.attrs
    out = avg_pool2d(
        arg,
        t.scale,
        t.zero_point,
        out_t.scale,
        out_t.zero_point,
        a.pool_size,
        a.strides,
        a.padding,
        a.dilation,
        ceil_mode=bool(a.ceil_mode),
        count_include_pad=bool(a.count_include_pad),
        layout=str(a.layout),
        out_layout=str(a.out_layout),
    )
    return [out, TensorAffineType(out_t.scale, out_t.zero_point, t.dtype, out_t.axis)]


def _fine_pool(expr: Call, t: TensorAffineType, out_t: TensorAffineType) -> Expr | None:
    """The pool of the input requantized to int32 at the result's step / ``2**k`` (the sum
    of a window still inside int32), then requantized to the result's parameters; None
    for per-channel or computed parameters, or when no finer step fits."""
    s, so = scalar_value(t.scale), scalar_value(out_t.scale)
    if s is None or so is None or so <= 0 or scalar_value(out_t.zero_point) is None:
        return None
    try:
        size = int(np.prod([int(d) for d in infer_shape(expr.args[0])]))
        pooled_size = max(int(np.prod([int(d) for d in infer_shape(expr)])), 1)
    except TypeError:  # a dynamic dimension: the window is not known
        return None
    window = 2 * -(-size // pooled_size)  # adaptive windows may overlap: twice the mean
    k = fine_shift(s / so, terms=window)
    if k < 8:
        return None
    fine = const(np.float32(so / 2.0**k), "float32")
    zero = const(np.int32(0), "int32")
    arg = requantize(expr.args[0], t.scale, t.zero_point, fine, zero, out_dtype="int32")
    pooled = make_call(op_name(expr), [arg], **{name: expr.attrs[name] for name in expr.attrs})
    return requantize(pooled, fine, zero, out_t.scale, out_t.zero_point, out_dtype=t.dtype)


def int32_pool_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """8-bit inputs: :func:`_fine_pool` (an int32 average of the values themselves
    truncates, and a requantize to the result's step first rounds twice); otherwise the
    input requantized to the result's parameters in int32, then pooled."""
    arg = expr.args[0]
    t: TensorAffineType = type_map[arg]
    out_t: TensorAffineType = type_map[expr]
    if t.dtype in ("int8", "uint8"):
        fine = _fine_pool(expr, t, out_t)
        if fine is not None:
            return [fine, TensorAffineType(out_t.scale, out_t.zero_point, t.dtype, -1)]
    if same_affine(t, TensorAffineType(out_t.scale, out_t.zero_point, t.dtype)):
        arg = make_call("cast", [arg], dtype="int32")
    else:
        arg = requantize(
            arg,
            t.scale,
            t.zero_point,
            out_t.scale,
            out_t.zero_point,
            axis=t.axis,
            out_dtype="int32",
        )
    given = {k: expr.attrs[k] for k in expr.attrs}
    out = make_call(op_name(expr), [arg], **given)
    return [out, TensorAffineType(out_t.scale, out_t.zero_point, "int32", out_t.axis)]


for _name in ("nn.global_avg_pool2d", "nn.adaptive_avg_pool1d", "nn.adaptive_avg_pool2d"):
    register_fake_quantization_to_integer(_name, int32_pool_rule)


def _reduced_count(shape: tuple[Any, ...], attrs: Any) -> int:
    ndim = len(shape)
    axes = attrs.axis
    chosen = set(range(ndim)) if axes is None else {int(a) % ndim for a in axes}
    if attrs.exclude:
        chosen = set(range(ndim)) - chosen
    return int(np.prod([int(shape[i]) for i in chosen])) if chosen else 1


@register_fake_quantization_to_integer("mean")
def mean_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``mean`` = an int32 ``sum`` of ``n`` values, requantized with input scale
    ``scale / n`` and zero point ``n * zero_point`` (one rounding, the final one)."""
    arg = expr.args[0]
    t: TensorAffineType = type_map[arg]
    out_t: TensorAffineType = type_map[expr]
    if per_channel(t):
        raise IRError("mean of a per-channel quantized input is not supported")
    s, z = fold(t.scale), fold(t.zero_point)
    if not (isinstance(s, Constant) and isinstance(z, Constant)):
        raise IRError("mean: the scale and zero point must be constants")
    n = _reduced_count(infer_shape(arg), expr.attrs)
    given = {k: expr.attrs[k] for k in expr.attrs}
    total = make_call("sum", [make_call("cast", [arg], dtype="int32")], **given)
    in_scale = const(np.float32(float(s.data.numpy().reshape(-1)[0]) / n), "float32")
    in_zp = const(np.int32(int(z.data.numpy().reshape(-1)[0]) * n), "int32")
    out = requantize(total, in_scale, in_zp, out_t.scale, out_t.zero_point, out_dtype=out_t.dtype)
    return [out, TensorAffineType(out_t.scale, out_t.zero_point, out_t.dtype, -1)]


@register_optional_fake_quantization_to_integer("nn.softmax")
def softmax_rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
    """``nn.softmax`` -> ``qnn.softmax`` (only with ``optional_qnn_ops=["nn.softmax"]``)."""
    arg = expr.args[0]
    t: TensorAffineType = type_map[arg]
    out_t: TensorAffineType = type_map[expr]
    out = softmax(arg, t.scale, t.zero_point, out_t.scale, out_t.zero_point, int(expr.attrs.axis))
    return [out, TensorAffineType(out_t.scale, out_t.zero_point, t.dtype, -1)]
