"""``tvm.relay.qnn.op.canonicalizations``: integer lookup tables for 8- and 16-bit
quantized functions (``create_integer_lookup_table`` / ``create_integer_lookup_op``)
and ``run_const_expr``.

A table lists, for every bit pattern of the input dtype (in unsigned order), the value
``quantize(f(dequantize(q)))``; the op reinterprets its input as unsigned and ``take``\\ s
from the table.

>>> import numpy as np
>>> from relaykit import relay
>>> t = create_integer_lookup_table(lambda v: v * 2, relay.const(1.0), relay.const(0),
...                                 relay.const(1.0), relay.const(0), input_dtype="int8",
...                                 output_dtype="int8")
>>> t[:3].tolist(), t[-1].tolist()
([0, 2, 4], -2)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError
from relaykit.execution.interpreter import create_executor
from relaykit.ir import IRModule
from relaykit.ir.expr import Expr, const
from relaykit.op import reinterpret, take
from relaykit.op.qnn import dequantize, quantize

__all__ = ["create_integer_lookup_table", "create_integer_lookup_op", "run_const_expr"]


def run_const_expr(expr: Expr) -> np.ndarray:
    """The value of an expression without free variables."""
    mod = IRModule.from_expr(expr)
    return np.asarray(create_executor("vm", mod=mod).evaluate()().numpy())


def create_integer_lookup_table(
    floating_point_func: Callable[[np.ndarray], np.ndarray],
    input_scale: Expr,
    input_zero_point: Expr,
    output_scale: Expr,
    output_zero_point: Expr,
    input_axis: int = -1,
    output_axis: int = -1,
    input_dtype: str = "uint8",
    output_dtype: str = "uint8",
) -> np.ndarray:
    """``quantize(f(dequantize(q)))`` for every bit pattern ``q`` of ``input_dtype``."""
    if np.dtype(input_dtype).kind not in "iu":
        raise ArgumentError(f"a lookup table needs an integer input dtype, got {input_dtype}")
    bits = np.iinfo(input_dtype).bits
    patterns = np.arange(0, 2**bits, dtype=f"uint{bits}").view(input_dtype)
    real = run_const_expr(
        dequantize(const(patterns, input_dtype), input_scale, input_zero_point, axis=input_axis)
    )
    out = np.asarray(floating_point_func(real), np.float32)
    return run_const_expr(
        quantize(const(out), output_scale, output_zero_point, output_axis, output_dtype)
    )


def create_integer_lookup_op(
    input_arg: Expr,
    floating_point_func: Callable[[np.ndarray], Any],
    in_scale: Expr,
    in_zero_point: Expr,
    out_scale: Expr,
    out_zero_point: Expr,
    in_axis: int = -1,
    out_axis: int = -1,
    in_dtype: str = "uint8",
    out_dtype: str = "uint8",
) -> Expr:
    """``input_arg`` mapped through :func:`create_integer_lookup_table`."""
    table = create_integer_lookup_table(
        floating_point_func, in_scale, in_zero_point, out_scale, out_zero_point,
        in_axis, out_axis, in_dtype, out_dtype,
    )  # fmt: skip
    bits = np.iinfo(in_dtype).bits
    index = reinterpret(input_arg, f"uint{bits}")
    return take(const(table), index, axis=0, mode="fast")
