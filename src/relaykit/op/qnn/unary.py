"""Quantized unary operators (TVM's ``relay.qnn.op``): ``tanh``, ``exp``, ``sqrt``,
``rsqrt``, ``erf``, ``abs``, ``sigmoid``, ``hardswish`` and ``log``, each
``f(x, scale, zero_point, output_scale, output_zero_point)``.

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


def _make_rel(op: str) -> Callable[[Sequence[Type], Attrs], Type]:
    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        x = tensor_arg(arg_types, 0, "x")
        if x.dtype not in QUANT_DTYPES:
            raise TypeRelError(f"{op} takes {QUANT_DTYPES} data, got {x.dtype}")
        for k, (what, dtype) in enumerate(_PARAMS, start=1):
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
