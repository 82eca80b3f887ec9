"""Counting analyses: how often each operator is called, and how many multiply-accumulates
a program's matrix products and convolutions perform.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x, w = relay.var("x", shape=(4, 8)), relay.var("w", shape=(16, 8))
>>> mod = relay.transform.InferType()(IRModule.from_expr(relay.nn.relu(relay.nn.dense(x, w))))
>>> list_op_freqs(mod), get_total_mac_number(mod["main"])
({'nn.dense': 1, 'nn.relu': 1}, 512)
"""

from __future__ import annotations

import math
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.expr import Call, Expr, checked_type_or_none
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType

from .infer_type import infer_type

__all__ = ["list_op_freqs", "get_total_mac_number"]

_CONVS = {
    "nn.conv1d",
    "nn.conv2d",
    "nn.conv3d",
    "nn.conv1d_transpose",
    "nn.conv2d_transpose",
    "nn.conv3d_transpose",
}
_MATMULS = {"nn.dense", "nn.batch_matmul", "nn.matmul"}


def _calls(root: Expr | IRModule) -> list[Call]:
    exprs = [fn for _, fn in root.items()] if isinstance(root, IRModule) else [root]
    seen: set[int] = set()
    out: list[Call] = []
    for expr in exprs:
        for node in post_order(expr, skip=lambda n: id(n) in seen):
            seen.add(id(node))
            if type(node) is Call and type(node.op) is Op:
                out.append(node)
    return out


def _op_name(call: Call) -> str:
    assert isinstance(call.op, Op)  # _calls() yields operator calls only
    return str(call.op.name)


def list_op_freqs(mod: IRModule | Expr) -> dict[str, int]:
    """``relay.analysis.list_op_freqs``: operator name -> number of calls of it in the
    module (calls inside fused functions included)."""
    freqs: dict[str, int] = {}
    for call in _calls(mod):
        name = _op_name(call)
        freqs[name] = freqs.get(name, 0) + 1
    return freqs


def _static(t: Any) -> list[int] | None:
    if not isinstance(t, TensorType):
        return None
    try:
        return [int(d) for d in t.shape]
    except (TypeError, ValueError):
        return None


def _macs(call: Call) -> int:
    name = _op_name(call)
    out = _static(checked_type_or_none(call))
    if out is None:
        return 0
    if name in _MATMULS:
        a = _static(checked_type_or_none(call.args[0]))
        if a is None:
            return 0
        transpose_a = bool(getattr(call.attrs, "transpose_a", False))
        k = a[-2] if transpose_a else a[-1]
        return math.prod(out) * k
    weight = _static(checked_type_or_none(call.args[1]))
    if weight is None:
        return 0
    layout = str(call.attrs.out_layout or call.attrs.data_layout)
    channels = math.prod([d for d, axis in zip(out, layout, strict=False) if axis in "Cc"])
    if channels == 0:
        return 0
    # each output element sums (input channels per group) x kernel window products
    return math.prod(out) * math.prod(weight) // channels


def get_total_mac_number(expr: Expr) -> int:
    """``relay.analysis.get_total_mac_number``: multiply-accumulates of the
    convolutions and matrix products in ``expr`` (shapes must be static)."""
    if isinstance(expr, IRModule):
        raise IRError("get_total_mac_number takes an expression; pass mod['main']")
    infer_type(expr)
    return sum(_macs(c) for c in _calls(expr) if _op_name(c) in _CONVS | _MATMULS)
