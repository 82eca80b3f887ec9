"""Function calls of TF2 graphs (``PartitionedCall``, ``StatefulPartitionedCall``, and
the branches of ``If``/``StatelessIf``):
the called ``FunctionDef`` of the graph's library as a graph of its own, which the
importer converts in place of the call (its arguments bound to the call's inputs).

Inside a function, a node reads ``"node:output_arg:index"``; a graph reads
``"node:flat_index"``. The flat index is the position of the output argument among
the op's outputs (TensorFlow's op registry says how many tensors each argument holds;
without TensorFlow, single-tensor arguments are assumed).

>>> from types import SimpleNamespace as NS
>>> ns = NS(name="n", op="Relu", input=[], attr={})
>>> flat_reference("n:activations:0", {"n": ns})
'n:0'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relaykit.errors import FrontendError

from .graphdef import node_attrs

__all__ = ["CALL_OPS", "COND_OPS", "FunctionGraph", "flat_reference", "function_graph"]

CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
#: conditionals whose branches are functions of the library
COND_OPS = frozenset({"If", "StatelessIf"})


class FunctionGraph:
    """A function's body in the shape of a ``GraphDef`` (``node`` and ``library``)."""

    def __init__(self, node: list[Any], library: Any) -> None:
        self.node = node
        self.library = library


def _op_def(op: str) -> Any:
    try:
        from tensorflow.python.framework import op_def_registry
    except ImportError:
        return None
    return op_def_registry.get(op)


def _offsets(node: Any) -> dict[str, int]:
    """Output argument name -> flat index of its first tensor."""
    op_def = _op_def(node.op)
    if op_def is None:
        return {}
    attrs = node_attrs(node)
    offsets: dict[str, int] = {}
    k = 0
    for arg in op_def.output_arg:
        offsets[arg.name] = k
        if arg.number_attr:
            k += int(attrs.get(arg.number_attr, 1))
        elif arg.type_list_attr:
            k += len(attrs.get(arg.type_list_attr) or [])
        else:
            k += 1
    return offsets


def flat_reference(ref: str, nodes: Mapping[str, Any], cache: dict[str, Any] | None = None) -> str:
    """A function-local input reference as a graph's (``node:k``)."""
    if ref.startswith("^"):
        return ref
    parts = ref.split(":")
    if len(parts) != 3:
        return ref
    name, arg, index = parts
    if name not in nodes:
        raise FrontendError(f"the function reads {ref!r}, but it has no node {name!r}")
    memo = cache if cache is not None else {}
    if name not in memo:
        memo[name] = _offsets(nodes[name])
    return f"{name}:{memo[name].get(arg, 0) + int(index)}"


def function_graph(fdef: Any, library: Any) -> tuple[FunctionGraph, list[str], list[str]]:
    """The body of ``fdef`` as a graph, its argument names and its results (graph
    references, in the order of its output arguments)."""
    nodes = {n.name: n for n in fdef.node_def}
    cache: dict[str, Any] = {}
    body = []
    for n in fdef.node_def:
        copy = type(n)()
        copy.CopyFrom(n)
        del copy.input[:]
        copy.input.extend(flat_reference(r, nodes, cache) for r in n.input)
        body.append(copy)
    args = [a.name for a in fdef.signature.input_arg]
    rets = [flat_reference(fdef.ret[a.name], nodes, cache) for a in fdef.signature.output_arg]
    return FunctionGraph(body, library), args, rets
