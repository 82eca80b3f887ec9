"""``tvm.relay.transform.fake_quantization_to_integer``: FakeQuantizationToInteger's
rule table and the helpers TVM's rules are written with, so a user or a backend adds
rules as in TVM.

>>> from relaykit import relay
>>> from relaykit.relay.transform import fake_quantization_to_integer as fq2i
>>> callable(fq2i.register_fake_quantization_to_integer)
True
"""

from collections.abc import Callable
from typing import Any

from relaykit.ir.affine_type import TensorAffineType
from relaykit.ir.expr import Call, Expr
from relaykit.transform.fake_quantization.elementwise import (
    binary_types,
    identity_binary_rule,
    qnn_binary_rule,
)
from relaykit.transform.fake_quantization.layout import identity_rule
from relaykit.transform.fake_quantization.registry import (
    approx_equal,
    get_zeros,
    infer_shape,
    register_fake_quantization_to_integer,
    register_optional_fake_quantization_to_integer,
)
from relaykit.transform.fold_constant import fold_constant

__all__ = [
    "approx_equal",
    "fold_constant",
    "get_binary_types",
    "get_zeros",
    "infer_shape",
    "register_binary_identity",
    "register_binary_qnn",
    "register_fake_quantization_to_integer",
    "register_optional_fake_quantization_to_integer",
    "register_unary_identity",
    "register_unary_qnn",
]


def get_binary_types(
    expr: Call, type_map: dict[Expr, Any]
) -> tuple[Expr, Expr, TensorAffineType, TensorAffineType, TensorAffineType]:
    """TVM's helper: both inputs of a binary call with their affine types and the
    result's (a float constant input quantized with the other input's parameters)."""
    return binary_types(expr, type_map)


def register_unary_identity(op_name: str) -> Any:
    """Register ``op_name`` as moving integers unchanged (the input's affine type)."""
    return register_fake_quantization_to_integer(op_name, identity_rule)


def register_binary_identity(op_name: str, op: Any = None) -> Any:
    """Register a binary ``op_name`` that commutes with requantization (min, max)."""
    return register_fake_quantization_to_integer(op_name, identity_binary_rule)


def register_binary_qnn(op_name: str, op: Any = None) -> Any:
    """Register ``add`` / ``subtract`` / ``multiply``-like ``op_name`` rewritten to its
    QNN twin (TVM's helper; relaykit knows the twins of the three)."""
    return register_fake_quantization_to_integer(op_name, qnn_binary_rule)


def register_unary_qnn(op_name: str, op: Callable[..., Call]) -> Any:
    """Register ``op_name`` rewritten to ``op(x, scale, zero_point, output_scale,
    output_zero_point)``."""

    def rule(expr: Call, type_map: dict[Expr, Any]) -> list[Any]:
        arg = expr.args[0]
        x_t: TensorAffineType = type_map[arg]
        out_t: TensorAffineType = type_map[expr]
        out = op(arg, x_t.scale, x_t.zero_point, out_t.scale, out_t.zero_point)
        return [out, TensorAffineType(out_t.scale, out_t.zero_point, x_t.dtype, -1)]

    return register_fake_quantization_to_integer(op_name, rule)
