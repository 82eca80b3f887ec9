"""Size measures of calls and regions: operator counts, multiply-accumulates, bytes.

MACs are counted from types for the contraction operators (conv1d/2d/3d and
their transposes, dense, matmul, batch_matmul); every other operator counts
zero. A composite call counts the operators inside its function.

>>> from relaykit import relay
>>> from relaykit.transform import infer_type
>>> x, w = relay.var("x", shape=(4, 8)), relay.var("w", shape=(16, 8))
>>> y = relay.nn.dense(x, w)
>>> _ = infer_type(y)
>>> call_macs(y)
512
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable

import numpy as np

from relaykit.ir.expr import Call, Constant, Expr, Function, checked_type_or_none
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, TupleType, Type

from ._common import annotation_ops, composite_name
from .targets import DEFAULT_TRANSPARENT_OPS

__all__ = [
    "call_macs",
    "call_op_count",
    "type_bytes",
    "constant_bytes",
    "op_names",
    "embedded_constants",
]


def _shape(expr: Expr) -> tuple[int, ...] | None:
    ty = checked_type_or_none(expr)
    return tuple(ty.shape) if isinstance(ty, TensorType) else None


def _prim_macs(call: Call, name: str) -> int:
    """Multiply-accumulates of one call of operator ``name``."""
    out = _shape(call)
    if out is None:
        return 0
    if name.startswith("nn.conv") and len(call.args) == 2:
        weight = _shape(call.args[1])
        if weight is None:
            return 0
        layout = str(call.attrs.get("kernel_layout", "")) or "OIHW"
        # Each output element takes one MAC per kernel element of one output channel.
        axis = layout.find("I" if "transpose" in name else "O")
        per_channel = math.prod(weight) // max(weight[axis], 1) if 0 <= axis < len(weight) else 0
        if "transpose" in name:
            # Transposed convolutions scatter: every input element meets the kernel
            # slice of each output channel of its group.
            data = _shape(call.args[0])
            return 0 if data is None else math.prod(data) * per_channel
        return math.prod(out) * per_channel
    if name in ("nn.dense", "nn.matmul"):
        data = _shape(call.args[0])
        if data is None or not data:
            return 0
        k = data[-2] if call.attrs.get("transpose_a", False) else data[-1]
        return math.prod(out) * k
    if name == "nn.batch_matmul":
        x = _shape(call.args[0])
        if x is None or len(x) < 2:
            return 0
        k = x[-2] if call.attrs.get("transpose_a", False) else x[-1]
        return math.prod(out) * k
    return 0


# Per composite function (weakly held, so the caches never keep a module alive).
_COMPOSITE_CACHE: weakref.WeakKeyDictionary[Function, tuple[list[str], int, tuple[Constant, ...]]]
_COMPOSITE_CACHE = weakref.WeakKeyDictionary()


def _composite_info(fn: Function) -> tuple[list[str], int, tuple[Constant, ...]]:
    """The operator names, MACs and constants of a composite function's body."""
    info = _COMPOSITE_CACHE.get(fn)
    if info is None:
        names: list[str] = []
        macs = 0
        consts: list[Constant] = []
        for node in post_order(fn.body):
            if type(node) is Call and type(node.op) is Op:
                names.append(node.op.name)
                macs += _prim_macs(node, node.op.name)
            elif type(node) is Constant:
                consts.append(node)
        info = _COMPOSITE_CACHE[fn] = (names, macs, tuple(consts))
    return info


def _composite_stats(fn: Function, transparent: frozenset[str]) -> tuple[int, int]:
    names, macs, _ = _composite_info(fn)
    return sum(1 for n in names if n not in transparent), macs


def call_macs(call: Call) -> int:
    """Multiply-accumulates of one operator or composite call (0 for other ops)."""
    op = call.op
    if type(op) is Op:
        return _prim_macs(call, op.name)
    if composite_name(op) is not None:
        return _composite_stats(op, DEFAULT_TRANSPARENT_OPS)[1]  # type: ignore[arg-type]
    return 0


def call_op_count(call: Call, transparent: frozenset[str] = DEFAULT_TRANSPARENT_OPS) -> int:
    """Operators a call stands for: 1, the size of a composite, 0 for annotations,
    transparent operators and calls of functions."""
    op = call.op
    if type(op) is Op:
        if op in annotation_ops() or op.name in transparent:
            return 0
        return 1
    if composite_name(op) is not None:
        return _composite_stats(op, transparent)[0]  # type: ignore[arg-type]
    return 0


def op_names(call: Call) -> list[str]:
    """The operator names a call stands for (a composite: its operators, in order)."""
    op = call.op
    if type(op) is Op:
        return [op.name]
    if composite_name(op) is not None:
        return list(_composite_info(op)[0])  # type: ignore[arg-type]
    return []


def type_bytes(ty: Type | None) -> int:
    """Bytes of a value of type ``ty`` (tuples summed; unknown types count 0)."""
    if isinstance(ty, TensorType):
        return math.prod(ty.shape) * _itemsize(ty.dtype)
    if isinstance(ty, TupleType):
        return sum(type_bytes(f) for f in ty.fields)
    return 0


def _itemsize(dtype: str) -> int:
    if dtype == "bool":
        return 1
    try:
        return np.dtype(dtype).itemsize
    except TypeError:
        return 0


def constant_bytes(nodes: Iterable[Expr]) -> int:
    """Bytes of the distinct constants among ``nodes``."""
    seen: set[int] = set()
    total = 0
    for n in nodes:
        if type(n) is Constant and id(n) not in seen:
            seen.add(id(n))
            total += int(n.data.numpy().nbytes)
    return total


def embedded_constants(call: Call) -> tuple[Constant, ...]:
    """The constants inside the function of a composite call (none for other calls)."""
    fn = call.op
    if composite_name(fn) is None:
        return ()
    return _composite_info(fn)[2]  # type: ignore[arg-type]
