"""Quantization's first pass: cut the graph into sections that will run in integers.

A section starts at an ``nn.conv2d``; ``nn.relu``, ``clip``, ``nn.max_pool2d`` and an
``add``/``multiply`` of a constant (a folded batch norm) extend it. Where a section's
value leaves it (a residual ``add`` of two sections, a ``multiply`` by a non-constant,
a ``nn.global_avg_pool2d``, a conv2d reading it), the value is *realized*:
``annotation.stop_fusion(annotation.cast_hint(value, dtype_input))``. That is where
TVM's quantization places ``stop_fusion``, so after ``realize`` each section is fused
on its own. Rules are the op attribute ``"FQPartitionRewrite"``
(:func:`register_partition_function`, TVM's name).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 2, 4, 4))
>>> c = relay.nn.conv2d(x, relay.var("w", shape=(2, 2, 1, 1)), kernel_size=(1, 1))
>>> y = relay.add(c, relay.nn.conv2d(x, relay.var("v", shape=(2, 2, 1, 1)), kernel_size=(1, 1)))
>>> out = partition_function(relay.Function(relay.analysis.free_vars(y), y))
>>> relay.Function.__name__, "stop_fusion" in str(out)
('Function', True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.expr import Call, Constant, Expr, Function
from relaykit.ir.module import IRModule
from relaykit.ir.op import register_op_attr
from relaykit.op.annotation import cast_hint, stop_fusion
from relaykit.transform.pass_infra import FunctionPass, Pass, PassContext

from .config import current_qconfig
from .rewrite import TempExpr, forward_op, forward_rewrite

__all__ = [
    "QPartitionExpr",
    "partition",
    "partition_expr_check",
    "partition_function",
    "register_partition_function",
]

RULE_KEY = "FQPartitionRewrite"


class QPartitionExpr(TempExpr):
    """A value inside a quantized section; realized with ``cast_hint`` + ``stop_fusion``."""

    def __init__(self, expr: Expr) -> None:
        self.expr = expr

    def realize(self) -> Expr:
        return stop_fusion(cast_hint(self.expr, current_qconfig().dtype_input))


def register_partition_function(
    op_name: str, frewrite: Callable[..., Any] | None = None, level: int = 10
) -> Any:
    """Register the partition rule ``frewrite(ref_call, new_args, ctx)`` of ``op_name``."""
    return register_op_attr(op_name, RULE_KEY, frewrite, level)


def partition_expr_check(expr: Any) -> tuple[bool, Any]:
    """``(True, inner)`` for a :class:`QPartitionExpr`, else ``(False, expr)``."""
    if isinstance(expr, QPartitionExpr):
        return True, expr.expr
    return False, expr


def _conv2d(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    data_cond, data = partition_expr_check(new_args[0])
    kernel_cond, kernel = partition_expr_check(new_args[1])
    if kernel_cond:
        raise IRError(f"quantize partition: the weight of {ref_call.op} is computed by a section")
    if data_cond:
        data = new_args[0].realize()
    return QPartitionExpr(forward_op(ref_call, [data, kernel]))


def _identity(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    cond, expr = partition_expr_check(new_args[0])
    if cond:
        return QPartitionExpr(forward_op(ref_call, [expr]))
    return None


def _add(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    lhs_cond, lhs = partition_expr_check(new_args[0])
    rhs_cond, rhs = partition_expr_check(new_args[1])
    if lhs_cond and rhs_cond:  # residual join of two sections
        return QPartitionExpr(forward_op(ref_call, [new_args[0].realize(), new_args[1].realize()]))
    if rhs_cond:  # residual: a value from before joins a section
        return forward_op(ref_call, [lhs, new_args[1].realize()])
    if lhs_cond:
        if type(rhs) is Constant:  # a folded batch norm's bias
            return QPartitionExpr(forward_op(ref_call, [lhs, rhs]))
        return forward_op(ref_call, [new_args[0].realize(), rhs])
    return None


def _multiply(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    lhs_cond, lhs = partition_expr_check(new_args[0])
    rhs_cond, rhs = partition_expr_check(new_args[1])
    if lhs_cond:
        return QPartitionExpr(forward_op(ref_call, [new_args[0].realize(), rhs]))
    if rhs_cond:
        return QPartitionExpr(forward_op(ref_call, [lhs, new_args[1].realize()]))
    return None


def _global_avg_pool2d(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    cond, _ = partition_expr_check(new_args[0])
    arg = new_args[0] if cond else QPartitionExpr(new_args[0])
    return forward_op(ref_call, [arg.realize()])


register_partition_function("nn.conv2d", _conv2d)
for _name in ("clip", "nn.relu", "nn.max_pool2d"):
    register_partition_function(_name, _identity)
register_partition_function("add", _add)
register_partition_function("multiply", _multiply)
register_partition_function("nn.global_avg_pool2d", _global_avg_pool2d)


def partition_function(func: Function) -> Function:
    """``func`` with its quantized sections marked (see the module docstring)."""
    return forward_rewrite(func, RULE_KEY)


def partition() -> Pass:
    """TVM's ``relay.quantize.partition()``: the pass ``QuantizePartition``."""

    def run(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return partition_function(func)

    return FunctionPass(run, 1, "QuantizePartition")
