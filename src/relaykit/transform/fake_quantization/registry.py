"""The rule table of FakeQuantizationToInteger and the helpers rules share.

A rule is registered for an operator under the attribute
``"FTVMFakeQuantizationToInteger"`` (TVM's name): ``rule(expr, type_map)`` gets the
call with its inputs already rewritten to integers, and ``type_map`` (a dict from
expression to :class:`~relaykit.ir.TensorAffineType`) holding the affine type of every
rewritten input (a constant input has none) and, for the call itself, the type of the
region's final ``qnn.quantize``. It returns ``[integer_expr, affine_type]``. An operator
registered with :func:`register_optional_fake_quantization_to_integer` is rewritten only
when named in the pass's ``optional_qnn_ops``.

>>> import relaykit as tvm
>>> from relaykit.ir.op import default_registry
>>> callable(default_registry.get_attr("nn.conv2d", FQ2I_ATTR))
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.errors import IRError
from relaykit.ir.affine_type import TensorAffineType
from relaykit.ir.expr import Call, Constant, Expr, const
from relaykit.ir.op import default_registry
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType
from relaykit.transform.fold_constant import fold_constant

__all__ = [
    "FQ2I_ATTR",
    "FQ2I_OPTIONAL_ATTR",
    "QAT_OPS",
    "Rule",
    "register_fake_quantization_to_integer",
    "register_optional_fake_quantization_to_integer",
    "rule_of",
    "op_name",
    "approx_equal",
    "same_affine",
    "fold",
    "get_zeros",
    "tensor_type",
    "infer_shape",
    "scalar_value",
]

FQ2I_ATTR = "FTVMFakeQuantizationToInteger"
FQ2I_OPTIONAL_ATTR = "FTVMOptionalFakeQuantizationToInteger"

Rule = Callable[[Any, dict[Expr, Any]], Any]

# the operators the partial-region mode (``use_qat=True``) rewrites, as TVM's list
QAT_OPS = frozenset(
    {
        "broadcast_to",
        "clip",
        "expand_dims",
        "max",
        "maximum",
        "min",
        "minimum",
        "nn.avg_pool2d",
        "nn.batch_flatten",
        "nn.batch_matmul",
        "nn.bias_add",
        "nn.conv2d",
        "nn.conv2d_transpose",
        "nn.dense",
        "nn.depth_to_space",
        "nn.global_avg_pool2d",
        "nn.max_pool2d",
        "nn.pad",
        "nn.relu",
        "reshape",
        "split",
        "squeeze",
        "strided_slice",
        "transpose",
    }
)


def register_fake_quantization_to_integer(
    op_name: str, func: Rule | None = None, level: int = 10
) -> Any:
    """Register ``func`` as ``op_name``'s rewrite rule (TVM's decorator of the same name).

    >>> @register_fake_quantization_to_integer("my.op", level=11)  # doctest: +SKIP
    ... def rule(expr, type_map):
    ...     return [expr, type_map[expr.args[0]]]
    """

    def _register(f: Rule) -> Rule:
        default_registry.set_attr(op_name, FQ2I_ATTR, f, level)
        return f

    return _register if func is None else _register(func)


def register_optional_fake_quantization_to_integer(
    op_name: str, func: Rule | None = None, level: int = 10
) -> Any:
    """Register a rule used only when the pass names ``op_name`` in ``optional_qnn_ops``."""

    def _register(f: Rule) -> Rule:
        default_registry.set_attr(op_name, FQ2I_OPTIONAL_ATTR, f, level)
        return f

    return _register if func is None else _register(func)


def rule_of(op_name: str, optional_ops: frozenset[str]) -> Rule | None:
    """The rule the pass uses for ``op_name``, or None."""
    if op_name in optional_ops:
        rule = default_registry.get_attr(op_name, FQ2I_OPTIONAL_ATTR)
        if rule is not None:
            return rule
    return default_registry.get_attr(op_name, FQ2I_ATTR)


def op_name(call: Call) -> str:
    """The name of the operator ``call`` calls."""
    return str(getattr(call.op, "name", ""))


def fold(expr: Expr) -> Expr:
    """``expr`` with its constant parts computed."""
    return expr if isinstance(expr, Constant) else fold_constant(expr)


def _value(expr: Expr) -> np.ndarray | None:
    folded = fold(expr)
    return folded.data.numpy() if isinstance(folded, Constant) else None


def scalar_value(expr: Expr) -> float | None:
    """The value of ``expr`` when it folds to a constant of one element, else None."""
    value = _value(expr)
    return float(value.reshape(-1)[0]) if value is not None and value.size == 1 else None


def approx_equal(x: Expr, y: Expr) -> bool:
    """Whether two scales or zero points are (to float tolerance) the same constants."""
    if x is y:
        return True
    a, b = _value(x), _value(y)
    if a is None or b is None:
        return False
    try:
        return bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-7))
    except ValueError:
        return False


def same_affine(a: TensorAffineType, b: TensorAffineType) -> bool:
    """Same scale, zero point and dtype."""
    return (
        a.dtype == b.dtype
        and approx_equal(a.scale, b.scale)
        and approx_equal(a.zero_point, b.zero_point)
    )


def get_zeros(scale: Expr) -> Expr:
    """int32 zero points of ``scale``'s shape."""
    value = _value(scale)
    shape = () if value is None else value.shape
    return const(np.zeros(shape, np.int32), "int32")


def tensor_type(expr: Expr) -> TensorType:
    """The tensor type of ``expr`` (typed on demand)."""
    ty = infer_type_local(expr)
    if not isinstance(ty, TensorType):
        raise IRError(f"expected a tensor, got {ty}")
    return ty


def infer_shape(expr: Expr) -> tuple[Any, ...]:
    """The shape of ``expr``."""
    return tuple(tensor_type(expr).shape)
