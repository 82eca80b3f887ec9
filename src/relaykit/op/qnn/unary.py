"""Quantized unary operators (TVM's ``relay.qnn.op``): ``tanh``, ``exp``, ``sqrt``,
``rsqrt``, ``erf``, ``abs``, ``sigmoid``, ``hardswish`` and ``log``, each
``f(x, scale, zero_point, output_scale, output_zero_point)``, and ``leaky_relu``
(integer arithmetic, as TVM lowers it).

They compute as TVM's floating-point emulation does: dequantize, the float32 function,
quantize to the input dtype (TVM's ``Legalize`` turns 8-bit ones into a lookup table of
the same values). The float function is written once, as a sequence of Relay operators
(:data:`FLOAT_FUNCS`), so the kernel and the canonical form compute the same floats.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(4,), dtype="uint8")
>>> s, z = relay.const(0.1), relay.const(0)
>>> tanh(x, s, z, s, z).op.name
'qnn.tanh'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.op import default_registry
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_attrs, make_call

from ._common import (
    QUANT_DTYPES,
    check_qparam_type,
    check_scale_const,
    check_zero_point_const,
    fixed_point_multiply,
    qrange,
    requantize_values,
    runtime_qparams,
    static_dtype,
)
from .quantize import _dequantize, _quantize

__all__ = [
    "tanh",
    "exp",
    "sqrt",
    "rsqrt",
    "erf",
    "abs",
    "sigmoid",
    "hardswish",
    "log",
    "leaky_relu",
    "FLOAT_FUNCS",
    "Builder",
]


class Builder(Protocol):
    """Applies a Relay operator (to arrays or to expressions) and makes constants."""

    def call(self, op: str, *args: Any) -> Any: ...

    def const(self, value: float) -> Any: ...


class ArrayBuilder:
    """Runs the operators' kernels on float32 arrays."""

    def call(self, op: str, *args: Any) -> Any:
        o = default_registry.get(op)
        return o.get_attr("FCompute")(list(args), make_attrs(o, {}))

    def const(self, value: float) -> Any:
        return np.float32(value)


def _unary(name: str) -> Callable[[Builder, Any], Any]:
    return lambda b, x: b.call(name, x)


def _hardswish(b: Builder, x: Any) -> Any:
    six = b.const(6.0)
    inner = b.call("maximum", b.call("minimum", b.call("add", x, b.const(3.0)), six), b.const(0.0))
    return b.call("divide", b.call("multiply", x, inner), six)


FLOAT_FUNCS: dict[str, Callable[[Builder, Any], Any]] = {
    "tanh": _unary("tanh"),
    "exp": _unary("exp"),
    "sqrt": _unary("sqrt"),
    "rsqrt": _unary("rsqrt"),
    "erf": _unary("erf"),
    "abs": _unary("abs"),
    "sigmoid": _unary("sigmoid"),
    "hardswish": _hardswish,
    "log": _unary("log"),
}

_PARAMS = (
    ("scale", "float32"),
    ("zero_point", "int32"),
    ("output_scale", "float32"),
    ("output_zero_point", "int32"),
)


def _make_rel(
    op: str, inputs: tuple[str, str] = ("scale", "zero_point")
) -> Callable[[Sequence[Type], Attrs], Type]:
    params = ((inputs[0], "float32"), (inputs[1], "int32"), *_PARAMS[2:])

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        x = tensor_arg(arg_types, 0, "x")
        if x.dtype not in QUANT_DTYPES:
            raise TypeRelError(f"{op} takes {QUANT_DTYPES} data, got {x.dtype}")
        for k, (what, dtype) in enumerate(params, start=1):
            check_qparam_type(arg_types[k], dtype, what, op, (1,), 0)
        return TensorType(x.shape, x.dtype)

    return rel


def _make_kernel(fn: Callable[[Builder, Any], Any]) -> Callable[[Sequence[Any], Attrs], Any]:
    def kernel(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
        x, s, z, os, oz = (np.asarray(a) for a in inputs)
        deq = _dequantize([x, s, z], Attrs({"axis": -1, "out_dtype": "float32"}))
        with np.errstate(all="ignore"):
            y = np.asarray(fn(ArrayBuilder(), deq), np.float32)
            return _quantize([y, os, oz], Attrs({"axis": -1, "out_dtype": str(x.dtype)}))

    return kernel


for _short, _fn in FLOAT_FUNCS.items():
    define_op(
        f"qnn.{_short}",
        num_inputs=5,
        type_rel=_make_rel(f"qnn.{_short}"),
        compute=_make_kernel(_fn),
        pattern=OpPattern.OPAQUE,
        doc=f"Quantized {_short}: dequantize, float32 {_short}, quantize.",
    )


def _leaky_relu(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
    x, s, z, os, oz = (np.asarray(a) for a in inputs)
    runtime_qparams(
        "qnn.leaky_relu",
        [("input_scale", s), ("output_scale", os)],
        [("input_zero_point", z, str(x.dtype)), ("output_zero_point", oz, str(x.dtype))],
    )
    zp = np.int64(z.reshape(-1)[0])
    shifted = (x.astype(np.int64) - zp).astype(np.int32)
    prod = fixed_point_multiply(shifted, float(attrs.alpha), "UPWARD")
    rp = requantize_values(prod, s, np.int32(0), os, oz, -1, "UPWARD", "int64", "int32")
    ri = requantize_values(x, s, z, os, oz, -1, "UPWARD", "int64", "int32")
    out = np.where(x.astype(np.int64) < zp, rp, ri)
    lo, hi = qrange(str(x.dtype))
    return np.asarray(np.clip(out, lo, hi).astype(x.dtype))


define_op(
    "qnn.leaky_relu",
    num_inputs=5,
    attrs={"alpha": 0.25},
    attrs_type_key="relay.attrs.LeakyReluAttrs",
    type_rel=_make_rel("qnn.leaky_relu", ("input_scale", "input_zero_point")),
    compute=_leaky_relu,
    pattern=OpPattern.ELEMWISE,
    doc="Quantized leaky_relu: x, or alpha * x below the zero point, in integers.",
)


def leaky_relu(
    x: Expr,
    alpha: float,
    input_scale: Expr,
    input_zero_point: Expr,
    output_scale: Expr,
    output_zero_point: Expr,
) -> Call:
    """TVM's ``relay.qnn.op.leaky_relu``: ``x`` where it is at least the zero point, else
    ``alpha * x`` (the product in Q31 fixed point), requantized to the output."""
    op = "qnn.leaky_relu"
    dtype = static_dtype(x)
    check_scale_const(input_scale, "input_scale", op)
    check_scale_const(output_scale, "output_scale", op)
    check_zero_point_const(input_zero_point, dtype, "input_zero_point", op)
    check_zero_point_const(output_zero_point, dtype, "output_zero_point", op)
    return make_call(
        op, [x, input_scale, input_zero_point, output_scale, output_zero_point], alpha=float(alpha)
    )


def _make(short: str) -> Callable[..., Call]:
    op = f"qnn.{short}"

    def ctor(
        x: Expr, scale: Expr, zero_point: Expr, output_scale: Expr, output_zero_point: Expr
    ) -> Call:
        dtype = static_dtype(x)
        check_scale_const(scale, "scale", op)
        check_scale_const(output_scale, "output_scale", op)
        check_zero_point_const(zero_point, dtype, "zero_point", op)
        check_zero_point_const(output_zero_point, dtype, "output_zero_point", op)
        return make_call(op, [x, scale, zero_point, output_scale, output_zero_point])

    ctor.__name__ = ctor.__qualname__ = short
    ctor.__doc__ = f"TVM's ``relay.qnn.op.{short}``."
    return ctor


tanh = _make("tanh")
exp = _make("exp")
sqrt = _make("sqrt")
rsqrt = _make("rsqrt")
erf = _make("erf")
abs = _make("abs")
sigmoid = _make("sigmoid")
hardswish = _make("hardswish")
log = _make("log")
