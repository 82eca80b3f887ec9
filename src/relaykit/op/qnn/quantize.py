"""Quantize, dequantize and requantize (TVM's ``relay.qnn.op``).

- ``qnn.quantize(x, s, z)`` = ``clip(round(x / s) + z)`` in the output dtype (rounding
  halves away from zero, as TVM's ``round`` does; ``rounding="TONEAREST_EVEN"`` rounds
  them to even, as ONNX's QuantizeLinear and onnxruntime do);
- ``qnn.dequantize(q, s, z)`` = ``s * (q - z)``;
- ``qnn.requantize`` moves ``q`` from one scale and zero point to others with TVM's
  integer arithmetic: a Q31 fixed-point multiplier in int64, rounded ``UPWARD`` (the
  default), ``TONEAREST`` or ``TONEAREST_EVEN`` (relaykit's addition, onnxruntime's
  rounding), or in ``compute_dtype`` ``float32`` / ``float64``;
- ``qnn.simulated_quantize`` / ``simulated_dequantize`` do the same in float, the target
  dtype a run-time code (``SQNN_DTYPE_TO_CODE``).

Scales and zero points are scalars or vectors along ``axis`` (per channel).

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(4,), dtype="int32")
>>> y = requantize(x, relay.const(0.5), relay.const(0), relay.const(1.0), relay.const(0))
>>> y.op.name, y.attrs.out_dtype
('qnn.requantize', 'int8')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import AttrError, ExecutionError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, const
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

from ._common import (
    QUANT_DTYPES,
    QUANTIZE_ROUNDINGS,
    ROUNDINGS,
    channel_shape,
    check_qparam_type,
    check_scale_const,
    check_zero_point_const,
    qrange,
    requantize_values,
    rint,
    runtime_qparams,
    static_dtype,
)
from .config import current_requantize_config

__all__ = [
    "quantize",
    "dequantize",
    "requantize",
    "simulated_quantize",
    "simulated_dequantize",
    "SQNN_DTYPE_TO_CODE",
    "resolve_rounding",
    "resolve_compute_dtype",
]

_FLOATS = ("float32", "float16")


def _axis(attrs: Attrs, ndim: int) -> int:
    axis = int(attrs.axis)
    return axis % ndim if ndim else 0


def _qparams(
    arg_types: Sequence[Type], whats: Sequence[str], op: str, data: TensorType, axis: int
) -> None:
    for k, what in enumerate(whats, start=1):
        dtype = "float32" if what.endswith("scale") else "int32"
        check_qparam_type(arg_types[k], dtype, what, op, data.shape, axis)


_OUT = ("output_scale", "output_zero_point")
_IN = ("input_scale", "input_zero_point")


def _quantize_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in _FLOATS:
        raise TypeRelError(f"qnn.quantize takes float32 or float16 data, got {data.dtype}")
    out = str(attrs.out_dtype)
    if out not in QUANT_DTYPES:
        raise TypeRelError(f"qnn.quantize: out_dtype must be one of {QUANT_DTYPES}, got {out}")
    _qparams(arg_types, _OUT, "qnn.quantize", data, int(attrs.axis))
    return TensorType(data.shape, out)


def _quantize(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
    data, scale, zp = (np.asarray(a) for a in inputs)
    out = str(attrs.out_dtype)
    runtime_qparams("qnn.quantize", [("output_scale", scale)], [("output_zero_point", zp, out)])
    nd = max(data.ndim, 1)
    axis = _axis(attrs, nd)
    s = channel_shape(scale, nd, axis).astype(np.float32)
    z = channel_shape(zp, nd, axis).astype(np.float32)
    v = rint(data.astype(np.float32) / s, str(attrs.get("rounding", "TONEAREST"))) + z
    lo, hi = qrange(out)
    return np.asarray(np.clip(v, lo, hi).astype(out))


define_op(
    "qnn.quantize",
    num_inputs=3,
    attrs={"axis": -1, "out_dtype": "int8", "rounding": "TONEAREST"},
    attrs_type_key="relay.attrs.QuantizeAttrs",
    type_rel=_quantize_rel,
    compute=_quantize,
    pattern=OpPattern.ELEMWISE,
    doc="Quantize a float tensor: clip(round(x / scale) + zero_point).",
)


def quantize(
    data: Expr,
    output_scale: Expr,
    output_zero_point: Expr,
    axis: int = -1,
    out_dtype: str = "int8",
    rounding: str = "TONEAREST",
) -> Call:
    """TVM's ``relay.qnn.op.quantize``; ``rounding`` (relaykit's addition) says where
    halves go: ``TONEAREST`` away from zero (TVM), ``UPWARD`` up, ``TONEAREST_EVEN`` to
    even (ONNX's QuantizeLinear: the ONNX frontend asks for it)."""
    check_scale_const(output_scale, "output_scale", "qnn.quantize")
    check_zero_point_const(output_zero_point, str(out_dtype), "output_zero_point", "qnn.quantize")
    if str(rounding) not in QUANTIZE_ROUNDINGS:
        raise AttrError(
            f"qnn.quantize: rounding must be one of {QUANTIZE_ROUNDINGS}, got {rounding!r}"
        )
    return make_call(
        "qnn.quantize",
        [data, output_scale, output_zero_point],
        axis=int(axis),
        out_dtype=str(out_dtype),
        rounding=str(rounding),
    )


def _dequantize_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in QUANT_DTYPES:
        raise TypeRelError(f"qnn.dequantize takes {QUANT_DTYPES} data, got {data.dtype}")
    out = str(attrs.out_dtype)
    if out not in _FLOATS:
        raise TypeRelError(f"qnn.dequantize: out_dtype must be float32 or float16, got {out}")
    _qparams(arg_types, _IN, "qnn.dequantize", data, int(attrs.axis))
    return TensorType(data.shape, out)


def _dequantize(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
    data, scale, zp = (np.asarray(a) for a in inputs)
    runtime_qparams(
        "qnn.dequantize", [("input_scale", scale)], [("input_zero_point", zp, str(data.dtype))]
    )
    nd = max(data.ndim, 1)
    axis = _axis(attrs, nd)
    shifted = (data.astype(np.int64) - channel_shape(zp, nd, axis).astype(np.int64)).astype(
        np.int32
    )
    s = channel_shape(scale, nd, axis).astype(np.float32)
    return np.asarray((shifted.astype(np.float32) * s).astype(str(attrs.out_dtype)))


define_op(
    "qnn.dequantize",
    num_inputs=3,
    attrs={"axis": -1, "out_dtype": "float32"},
    attrs_type_key="relay.attrs.DequantizeAttrs",
    type_rel=_dequantize_rel,
    compute=_dequantize,
    pattern=OpPattern.ELEMWISE,
    doc="Dequantize an integer tensor: scale * (q - zero_point).",
)


def dequantize(
    data: Expr,
    input_scale: Expr,
    input_zero_point: Expr,
    axis: int = -1,
    out_dtype: str = "float32",
) -> Call:
    """TVM's ``relay.qnn.op.dequantize``."""
    check_scale_const(input_scale, "input_scale", "qnn.dequantize")
    check_zero_point_const(
        input_zero_point, static_dtype(data), "input_zero_point", "qnn.dequantize"
    )
    return make_call(
        "qnn.dequantize",
        [data, input_scale, input_zero_point],
        axis=int(axis),
        out_dtype=str(out_dtype),
    )


def resolve_rounding(rounding: Any) -> str:
    """``"None"`` is the configured rounding (:func:`.config.requantize_config`; TVM's
    default ``UPWARD``)."""
    r = str(rounding)
    return current_requantize_config().rounding if r in ("None", "") else r


def resolve_compute_dtype(compute_dtype: Any) -> str:
    """``"None"`` is the configured compute dtype (TVM's default ``int64``)."""
    c = str(compute_dtype)
    return current_requantize_config().compute_dtype if c in ("None", "") else c


def _requantize_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in QUANT_DTYPES:
        raise TypeRelError(f"qnn.requantize takes {QUANT_DTYPES} data, got {data.dtype}")
    out = str(attrs.out_dtype)
    if out not in QUANT_DTYPES:
        raise TypeRelError(f"qnn.requantize: out_dtype must be one of {QUANT_DTYPES}, got {out}")
    _qparams(arg_types, _IN + _OUT, "qnn.requantize", data, int(attrs.axis))
    return TensorType(data.shape, out)


def _requantize(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
    data, isc, izp, osc, ozp = (np.asarray(a) for a in inputs)
    out = str(attrs.out_dtype)
    runtime_qparams(
        "qnn.requantize",
        [("input_scale", isc), ("output_scale", osc)],
        [("input_zero_point", izp, str(data.dtype)), ("output_zero_point", ozp, out)],
    )
    return requantize_values(
        data,
        isc,
        izp,
        osc,
        ozp,
        _axis(attrs, max(data.ndim, 1)),
        resolve_rounding(attrs.rounding),
        resolve_compute_dtype(attrs.compute_dtype),
        out,
    )


define_op(
    "qnn.requantize",
    num_inputs=5,
    attrs={"axis": -1, "rounding": "None", "compute_dtype": "None", "out_dtype": "int8"},
    attrs_type_key="relay.attrs.RequantizeAttrs",
    type_rel=_requantize_rel,
    compute=_requantize,
    pattern=OpPattern.ELEMWISE,
    doc="Requantize an integer tensor to another scale and zero point.",
)


def requantize(
    data: Expr,
    input_scale: Expr,
    input_zero_point: Expr,
    output_scale: Expr,
    output_zero_point: Expr,
    axis: int = -1,
    rounding: str = "None",
    compute_dtype: str = "None",
    out_dtype: str = "int8",
) -> Call:
    """TVM's ``relay.qnn.op.requantize``."""
    if resolve_rounding(rounding) not in ROUNDINGS:
        raise AttrError(
            "qnn.requantize: rounding must be UPWARD, TONEAREST, TONEAREST_EVEN or None, "
            f"got {rounding!r}"
        )
    if resolve_compute_dtype(compute_dtype) not in ("int64", "float32", "float64"):
        raise AttrError(
            "qnn.requantize: compute_dtype must be int64, float32, float64 or None, got "
            f"{compute_dtype!r}"
        )
    op = "qnn.requantize"
    check_scale_const(input_scale, "input_scale", op)
    check_scale_const(output_scale, "output_scale", op)
    check_zero_point_const(input_zero_point, static_dtype(data), "input_zero_point", op)
    check_zero_point_const(output_zero_point, str(out_dtype), "output_zero_point", op)
    return make_call(
        op,
        [data, input_scale, input_zero_point, output_scale, output_zero_point],
        axis=int(axis),
        rounding=str(rounding),
        compute_dtype=str(compute_dtype),
        out_dtype=str(out_dtype),
    )


# -- simulated_quantize / simulated_dequantize -------------------------------------------------

SQNN_DTYPE_TO_CODE = {"disable": 0, "int8": 1, "uint8": 2, "int32": 3}
_CODE_TO_DTYPE = {v: k for k, v in SQNN_DTYPE_TO_CODE.items()}


def _simulated_rel(op: str) -> Any:
    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        if data.dtype not in _FLOATS:
            raise TypeRelError(f"{op} takes float32 or float16 data, got {data.dtype}")
        code = tensor_arg(arg_types, 1, "the dtype code")
        if code.dtype != "int32" or code.shape:
            raise TypeRelError(f"{op}: the dtype code must be an int32 scalar, got {code}")
        for k, (what, dt) in enumerate((("scale", "float32"), ("zero_point", "int32")), start=2):
            t = tensor_arg(arg_types, k, what)
            if t.dtype != dt or len(t.shape) != 1:
                raise TypeRelError(f"{op}: {what} must be a 1-D {dt} tensor, got {t}")
        return data

    return rel


def _sim_params(op: str, data: np.ndarray, code: Any, scale: Any, zp: Any, axis: int) -> Any:
    c = int(np.asarray(code).reshape(()))
    if c not in _CODE_TO_DTYPE:
        raise ExecutionError(f"{op}: unknown dtype code {c} (codes: {SQNN_DTYPE_TO_CODE})")
    nd = max(data.ndim, 1)
    ax = axis % nd
    channels = data.shape[ax] if data.ndim else 1
    idx = np.arange(channels)
    s = np.asarray(scale, np.float32).reshape(-1)
    z = np.asarray(zp).reshape(-1)
    shape = [1] * nd
    shape[ax] = channels
    return _CODE_TO_DTYPE[c], s[idx % s.size].reshape(shape), z[idx % z.size].reshape(shape)


def _simulated_quantize(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
    data, code, scale, zp = (np.asarray(a) for a in inputs)
    dtype, s, z = _sim_params("qnn.simulated_quantize", data, code, scale, zp, int(attrs.axis))
    if dtype == "disable":
        return data
    lo, hi = qrange(dtype)
    v = rint(data / s.astype(data.dtype)) + z.astype(data.dtype)
    return np.asarray(np.clip(v, lo, hi).astype(data.dtype))


def _simulated_dequantize(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
    data, code, scale, zp = (np.asarray(a) for a in inputs)
    dtype, s, z = _sim_params("qnn.simulated_dequantize", data, code, scale, zp, int(attrs.axis))
    if dtype == "disable":
        return data
    return ((data - z.astype(data.dtype)) * s.astype(data.dtype)).astype(data.dtype)


for _name, _kernel in (
    ("qnn.simulated_quantize", _simulated_quantize),
    ("qnn.simulated_dequantize", _simulated_dequantize),
):
    define_op(
        _name,
        num_inputs=4,
        attrs={"axis": -1},
        attrs_type_key="relay.attrs.SimulatedQuantizeAttrs",
        type_rel=_simulated_rel(_name),
        compute=_kernel,
        pattern=OpPattern.ELEMWISE,
        doc="Quantization simulated in float (the dtype is a run-time code).",
    )


def _dtype_code(dtype: Any) -> Expr:
    if isinstance(dtype, Expr):
        return dtype
    if str(dtype) not in SQNN_DTYPE_TO_CODE:
        raise AttrError(f"dtype must be one of {list(SQNN_DTYPE_TO_CODE)}, got {dtype!r}")
    return const(np.int32(SQNN_DTYPE_TO_CODE[str(dtype)]), "int32")


def _flat(e: Expr) -> Expr:
    return make_call("reshape", [e], newshape=(-1,))


def simulated_quantize(
    data: Expr, output_scale: Expr, output_zero_point: Expr, axis: int = -1, out_dtype: Any = "int8"
) -> Call:
    """TVM's ``relay.qnn.op.simulated_quantize``: ``out_dtype`` a name or an int32
    expression holding a code of ``SQNN_DTYPE_TO_CODE`` (``disable`` passes data through)."""
    check_scale_const(output_scale, "output_scale", "qnn.simulated_quantize")
    return make_call(
        "qnn.simulated_quantize",
        [data, _dtype_code(out_dtype), _flat(output_scale), _flat(output_zero_point)],
        axis=int(axis),
    )


def simulated_dequantize(
    data: Expr, input_scale: Expr, input_zero_point: Expr, axis: int = -1, in_dtype: Any = "int8"
) -> Call:
    """TVM's ``relay.qnn.op.simulated_dequantize`` (see :func:`simulated_quantize`)."""
    check_scale_const(input_scale, "input_scale", "qnn.simulated_dequantize")
    return make_call(
        "qnn.simulated_dequantize",
        [data, _dtype_code(in_dtype), _flat(input_scale), _flat(input_zero_point)],
        axis=int(axis),
    )
