"""Merging duplicate nodes of a region program (common subexpressions).

Pattern partitioning may compute a node twice: when the interior of a match
(the convolution of ``add(conv_bias(x), y)``) has another user that flows back
into the match's root only, the matcher keeps the match and the interior node
is computed both inside the composite and outside it, as TVM does. On a
residual block whose input is itself a convolution (MobileNetV2's
``x + f(x)`` with ``x`` the previous block's 1x1 projection), the
``conv2d_bias_sum`` pattern takes that projection's convolution as its
anchor, so the region got the projection twice (5 extra convolutions in
torchvision's MobileNetV2, ~7% of its work). :func:`merge_duplicates` keeps
the first of nodes that do the same operation on the same tensors (constants
compared by value) and makes everyone read its output; the residual add then
fuses into the other operand's convolution as a ``sum`` post-op, as
onnxruntime does.

>>> import numpy as np
>>> from relaykit.backends.dnnl.run.program import Node, Program
>>> p = Program()
>>> x = p.add_input((1, 4))
>>> a, b, s = (p.new_tensor((1, 4)) for _ in range(3))
>>> p.nodes = [Node("eltwise", [x], a, {"alg": "relu"}),
...            Node("eltwise", [x], b, {"alg": "relu"}),
...            Node("binary", [a, b], s, {"alg": "add"})]
>>> p.outputs = [s]
>>> merge_duplicates(p)
1
>>> [(n.op, n.inputs) for n in p.nodes]
[('eltwise', [0]), ('binary', [1, 1])]
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from relaykit.backends.dnnl.run.program import Node, Program

__all__ = ["merge_duplicates"]

#: Attributes and post-op fields that name tensors (as in :meth:`Node.reads`).
_TENSOR_KEYS = ("weight", "bias")
_POST_TENSOR_KEYS = ("in", "weight", "bias")


def _signature(node: Node, rep: dict[int, int], p: Program) -> str:
    """The node's operation and output shape, with every tensor it reads replaced by its
    representative, constants by their shape only (they are compared by value afterwards)."""

    def name(t: int) -> Any:
        if t < 0:
            return t
        t = rep.get(t, t)
        return ["const", list(p.shapes[t])] if p.is_constant(t) else t

    attrs = {k: (name(v) if k in _TENSOR_KEYS else v) for k, v in node.attrs.items()}
    post = [
        {k: (name(v) if k in _POST_TENSOR_KEYS else v) for k, v in q.items()} for q in node.post
    ]
    # The output shape too: a reshape's target shape is only its output tensor's.
    doc = [node.op, [name(t) for t in node.inputs], attrs, post, list(p.shapes[node.out])]
    return json.dumps(doc, sort_keys=True, default=str)


def _constants(node: Node, rep: dict[int, int], p: Program) -> list[int]:
    return [rep.get(t, t) for t in node.reads() if p.is_constant(rep.get(t, t))]


def _same_constants(a: list[int], b: list[int], p: Program) -> bool:
    return len(a) == len(b) and all(
        x == y or np.array_equal(p.constants[x], p.constants[y]) for x, y in zip(a, b, strict=True)
    )


def _rename(node: Node, rep: dict[int, int]) -> None:
    node.inputs = [rep.get(t, t) for t in node.inputs]
    for k in _TENSOR_KEYS:
        t = node.attrs.get(k, -1)
        if t >= 0:
            node.attrs[k] = rep.get(t, t)
    for q in node.post:
        for k in _POST_TENSOR_KEYS:
            t = q.get(k, -1)
            if t >= 0:
                q[k] = rep.get(t, t)


def merge_duplicates(p: Program) -> int:
    """Drop every node of ``p`` (in place) that repeats an earlier node's operation on
    the same tensors, its readers reading the earlier node's output instead; a node
    writing a region output is kept. Returns how many nodes were dropped."""
    rep: dict[int, int] = {}
    seen: dict[str, list[Node]] = {}
    outputs = set(p.outputs)
    kept: list[Node] = []
    for node in p.nodes:
        _rename(node, rep)
        key = _signature(node, rep, p)
        mine = _constants(node, rep, p)
        twin = next(
            (n for n in seen.get(key, ()) if _same_constants(_constants(n, rep, p), mine, p)),
            None,
        )
        if twin is not None and node.out not in outputs:
            rep[node.out] = twin.out
            continue
        seen.setdefault(key, []).append(node)
        kept.append(node)
    p.nodes = kept
    return len(rep)
