"""Pieces of a module pulled out on their own: the primitive functions operator fusion makes
(``extract_fused_functions``) and the program up to one intermediate value
(``extract_intermdeiate_expr``, TVM's spelling, also ``extract_intermediate_expr``).

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2, 2))
>>> mod = IRModule.from_expr(relay.exp(relay.nn.relu(x)) + x)
>>> len(extract_fused_functions(mod))
1
>>> extract_intermediate_expr(mod, 0)["main"].body.op.name
'nn.relu'
"""

from __future__ import annotations

from relaykit.ir.expr import Call, Function, TupleGetItem
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.structural import structural_hash

from .fuse_ops import FuseOps
from .infer_type import InferType
from .pass_infra import PassContext, Sequential
from .simplify_inference import SimplifyInference

__all__ = ["extract_fused_functions", "extract_intermediate_expr", "extract_intermdeiate_expr"]


def extract_fused_functions(mod: IRModule) -> dict[int, Function]:
    """The distinct ``Primitive`` functions that ``FuseOps`` (at fusion level 3, after
    ``SimplifyInference``) makes of ``mod``, keyed by their structural hash (equal
    functions appear once), in the order they are met."""
    with PassContext(opt_level=3):
        fused = Sequential([InferType(), SimplifyInference(), FuseOps(fuse_opt_level=3)])(mod)
    found: dict[int, Function] = {}
    for _, fn in fused.items():
        for node in post_order(fn):
            if type(node) is Function and node is not fn and node.attrs.get("Primitive"):
                found.setdefault(structural_hash(node), node)
    return found


def extract_intermediate_expr(mod: IRModule, expr_id: int) -> IRModule:
    """The module computing the ``expr_id``-th value of ``main`` (counting its calls and
    tuple projections in post order, from 0) as its result; ``mod`` itself when there
    are not that many."""
    count = 0
    for node in post_order(mod["main"].body):
        if type(node) is Call or type(node) is TupleGetItem:
            if count == expr_id:
                return IRModule.from_expr(node)
            count += 1
    return mod


extract_intermdeiate_expr = extract_intermediate_expr  # TVM's name (sic)
