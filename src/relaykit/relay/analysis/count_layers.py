"""``tvm.relay.analysis.count_layers``: the depth of a network, in layers of given ops.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 4)); w = relay.var("w", shape=(4, 4))
>>> y = relay.nn.dense(relay.nn.relu(relay.nn.dense(x, w)), w)
>>> count_layers(relay.Function([x, w], y), valid_ops=["nn.dense"])
2
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from relaykit.ir.expr import Call, Expr, Function
from relaykit.ir.functor import children, post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op

__all__ = ["count_layers"]


def count_layers(expr: Expr | IRModule, valid_ops: Iterable[str]) -> int:
    """The largest number of calls to ``valid_ops`` on any path through ``expr`` (a
    residual block's projection shortcut runs beside its convolutions, so it does not
    add a layer)."""
    if isinstance(expr, IRModule):
        expr = expr["main"]
    if isinstance(expr, Function):
        expr = expr.body
    names = set(valid_ops)
    depth: dict[int, int] = {}
    node: Any
    for node in post_order(expr):
        below = max((depth.get(id(c), 0) for c in children(node)), default=0)
        counts = isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in names
        depth[id(node)] = below + int(counts)
    return depth[id(expr)]
