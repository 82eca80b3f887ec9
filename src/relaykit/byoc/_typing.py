"""Typing only what a rewrite created: nodes that already carry a checked type are
trusted (nodes are immutable, so their subtrees are unchanged and typed too).

Full type inference costs a walk of the whole function; after a rewrite that
touched a few places (``MergeComposite`` wrapping matches) this types just the
new nodes, with the IR's incremental checker (:func:`relaykit.ir.infer_type_local`,
TVM's ``InferTypeLocal``).

>>> from relaykit import relay
>>> from relaykit.ir import Function
>>> x = relay.var("x", shape=(2,))
>>> f = fill_types(Function([x], relay.nn.relu(x)))
>>> str(f.body.checked_type)
'Tensor[(2), float32]'
"""

from __future__ import annotations

from relaykit.ir.expr import Function
from relaykit.ir.module import IRModule
from relaykit.ir.type_check import infer_type_local

__all__ = ["fill_types"]


def fill_types(func: Function, mod: IRModule | None = None) -> Function:
    """``func`` with a checked type on every node (new nodes inferred, others kept)."""
    if not func.has_checked_type:
        infer_type_local(func, mod)
    return func
