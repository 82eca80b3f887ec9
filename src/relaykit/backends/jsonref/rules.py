"""What the ``jsonref`` backend accepts: operator rules and composite patterns.

float32 only: ``add``/``subtract``/``multiply``, ``nn.relu``, ``nn.bias_add``,
``nn.dense``, ``nn.conv2d`` (NCHW/OIHW), ``nn.max_pool2d`` and
``nn.global_avg_pool2d`` (NCHW), ``nn.batch_flatten``, ``nn.softmax``.
Composites fuse a bias (and a ReLU) into ``dense`` and ``conv2d``.
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

__all__ = ["TARGET", "RULES", "pattern_table"]

TARGET = "jsonref"


def _float32(call: Call) -> Decline | bool:
    for i, a in enumerate(call.args):
        ty = checked_type_or_none(a)
        if not (isinstance(ty, TensorType) and ty.dtype == "float32"):
            return decline(f"input {i} is {ty}; jsonref handles float32 tensors only")
    return True


def _nchw(key: str) -> Callable[[Call], Decline | bool]:
    def rule(call: Call) -> Decline | bool:
        layout = getattr(call.attrs, key)
        if layout != "NCHW" or call.attrs.out_layout not in ("", "NCHW"):
            return decline(f"layout {layout}; jsonref handles NCHW")
        return _float32(call)

    return rule


def _conv2d(call: Call) -> Decline | bool:
    a = call.attrs
    if has_multiplier_weight(call):
        return decline(MULTIPLIER_DECLINE)
    if a.data_layout != "NCHW" or a.kernel_layout != "OIHW" or a.out_layout not in ("", "NCHW"):
        return decline(f"layout {a.data_layout}/{a.kernel_layout}; jsonref handles NCHW/OIHW")
    if a.out_dtype not in ("", "float32"):
        return decline(f"out_dtype {a.out_dtype} is not float32")
    return _float32(call)


def _dense(call: Call) -> Decline | bool:
    if call.attrs.out_dtype not in ("", "float32"):
        return decline(f"out_dtype {call.attrs.out_dtype} is not float32")
    return _float32(call)


RULES: dict[str, Callable[[Call], Any]] = {
    "add": _float32,
    "subtract": _float32,
    "multiply": _float32,
    "nn.relu": _float32,
    "nn.bias_add": _float32,
    "nn.batch_flatten": _float32,
    "nn.softmax": _float32,
    "nn.dense": _dense,
    "nn.conv2d": _conv2d,
    "nn.max_pool2d": _nchw("layout"),
    "nn.global_avg_pool2d": _nchw("layout"),
}


def _check(op: str, last_axis: bool) -> Callable[[Expr], bool]:
    def check(root: Expr) -> bool:
        node = root
        while isinstance(node, Call) and getattr(node.op, "name", "") != op:
            if op_name(node) == "nn.bias_add":
                ndim = tensor_type(node).ndim
                want = ndim - 1 if last_axis else 1
                if node.attrs.axis % ndim != want or len(tensor_type(node.args[1]).shape) != 1:
                    return False
            if not RULES[op_name(node)](node):
                return False
            node = node.args[0]
        return isinstance(node, Call) and bool(RULES[op](node))

    return check


def pattern_table() -> list[tuple[str, Any, Any]]:
    conv_bias = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()), wildcard())
    dense_bias = is_op("nn.bias_add")(is_op("nn.dense")(wildcard(), wildcard()), wildcard())
    return [
        (f"{TARGET}.conv2d_bias_relu", is_op("nn.relu")(conv_bias), _check("nn.conv2d", False)),
        (f"{TARGET}.conv2d_bias", conv_bias, _check("nn.conv2d", False)),
        (f"{TARGET}.dense_bias_relu", is_op("nn.relu")(dense_bias), _check("nn.dense", True)),
        (f"{TARGET}.dense_bias", dense_bias, _check("nn.dense", True)),
    ]
