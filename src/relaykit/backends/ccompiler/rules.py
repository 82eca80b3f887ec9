"""What the ``ccompiler`` backend accepts: operator rules and composite patterns.

float32 only; ``add``/``subtract``/``multiply`` with any broadcasting (up to 8
axes), ``nn.relu``, ``nn.bias_add``, ``nn.dense``, and ``nn.conv2d`` in
NCHW/OIHW. Composites fuse a bias and a ReLU into ``dense`` and ``conv2d``.
Every refusal says why (see ``relaykit.byoc.explain``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaykit.backends.common import op_name, tensor_type
from relaykit.byoc.rules import Decline, decline
from relaykit.dataflow_pattern import is_op, wildcard
from relaykit.ir.expr import Call, Expr, checked_type_or_none
from relaykit.ir.types import TensorType
from relaykit.op.nn.conv_weights import MULTIPLIER_DECLINE, has_multiplier_weight

from .kernels_c import MAX_DIMS

__all__ = ["TARGET", "RULES", "pattern_table"]

TARGET = "ccompiler"


def _float32(expr: Expr) -> bool:
    ty = checked_type_or_none(expr)
    return isinstance(ty, TensorType) and ty.dtype == "float32"


def _all_float32(call: Call) -> Decline | bool:
    for i, a in enumerate(call.args):
        if not _float32(a):
            return decline(
                f"input {i} is {checked_type_or_none(a)}, ccompiler handles float32 only"
            )
    if checked_type_or_none(call) is not None and not _float32(call):
        return decline(f"output is {checked_type_or_none(call)}, ccompiler handles float32 only")
    for e in (*call.args, call):
        ty = checked_type_or_none(e)
        if isinstance(ty, TensorType) and not ty.is_static:
            return decline(
                f"dynamic shape {ty}: the generated C has static sizes (stays on the VM)"
            )
    return True


def _elementwise(call: Call) -> Decline | bool:
    ok = _all_float32(call)
    if not ok:
        return ok
    ty = checked_type_or_none(call)
    if isinstance(ty, TensorType) and ty.ndim > MAX_DIMS:
        return decline(f"{ty.ndim} axes; ccompiler handles up to {MAX_DIMS}")
    return True


def _bias_add(call: Call) -> Decline | bool:
    ok = _elementwise(call)
    if ok and len(tensor_type(call.args[1]).shape) != 1:
        return decline("the bias must be 1-D")
    return ok


def _dense(call: Call) -> Decline | bool:
    if call.attrs.out_dtype not in ("", "float32"):
        return decline(f"out_dtype {call.attrs.out_dtype} is not float32")
    return _all_float32(call)


def _conv2d(call: Call) -> Decline | bool:
    a = call.attrs
    if has_multiplier_weight(call):
        return decline(MULTIPLIER_DECLINE)
    if a.data_layout != "NCHW" or a.kernel_layout != "OIHW":
        return decline(f"layout {a.data_layout}/{a.kernel_layout}; ccompiler handles NCHW/OIHW")
    if a.out_layout not in ("", "NCHW"):
        return decline(f"out_layout {a.out_layout} is not NCHW")
    if a.out_dtype not in ("", "float32"):
        return decline(f"out_dtype {a.out_dtype} is not float32")
    return _all_float32(call)


RULES: dict[str, Callable[[Call], Any]] = {
    "add": _elementwise,
    "subtract": _elementwise,
    "multiply": _elementwise,
    "nn.relu": _elementwise,
    "nn.bias_add": _bias_add,
    "nn.dense": _dense,
    "nn.conv2d": _conv2d,
}


def _chain(root: Expr, names: list[str]) -> list[Call] | None:
    """The calls ``names[0](names[1](...))`` down the first arguments from ``root``."""
    out: list[Call] = []
    node = root
    for name in names:
        if not (isinstance(node, Call) and getattr(node.op, "name", None) == name):
            return None
        out.append(node)
        node = node.args[0]
    return out


def _check(names: list[str], bias_axis: tuple[int, ...]) -> Callable[[Expr], bool]:
    """A pattern check: each op of the chain passes its rule; the bias is on ``bias_axis``."""

    def check(root: Expr) -> bool:
        calls = _chain(root, names)
        if calls is None:
            return False
        for c in calls:
            if not RULES[op_name(c)](c):
                return False
        bias = next(c for c in calls if op_name(c) == "nn.bias_add")
        ndim = tensor_type(bias.args[0]).ndim
        on_axis = any(bias.attrs.axis % ndim == ax % ndim for ax in bias_axis)
        return on_axis and len(tensor_type(bias.args[1]).shape) == 1

    return check


def pattern_table() -> list[tuple[str, Any, Any]]:
    """Composite patterns of ccompiler, largest first."""
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    conv_bias = is_op("nn.bias_add")(conv, wildcard())
    dense = is_op("nn.dense")(wildcard(), wildcard())
    dense_bias = is_op("nn.bias_add")(dense, wildcard())
    return [
        (
            f"{TARGET}.conv2d_bias_relu",
            is_op("nn.relu")(conv_bias),
            _check(["nn.relu", "nn.bias_add", "nn.conv2d"], (1,)),
        ),
        (f"{TARGET}.conv2d_bias", conv_bias, _check(["nn.bias_add", "nn.conv2d"], (1,))),
        (
            f"{TARGET}.dense_bias_relu",
            is_op("nn.relu")(dense_bias),
            _check(["nn.relu", "nn.bias_add", "nn.dense"], (-1,)),
        ),
        (f"{TARGET}.dense_bias", dense_bias, _check(["nn.bias_add", "nn.dense"], (-1,))),
    ]
