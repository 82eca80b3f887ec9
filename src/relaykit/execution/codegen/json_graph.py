"""Base of JSON codegens: a partitioned function -> a JSON graph and its constants.

:class:`JSONSerializer` walks a partitioned function and writes the graph
format that :class:`~relaykit.runtime.json_runtime.JSONRuntimeBase` runs
(nodes ``input``/``const``/``kernel``, entries ``[node, output]``, ``heads``).
Constants are left out of the JSON and returned as arrays. An operator call
becomes a kernel node named after the operator with the call's attributes; a
composite call becomes a kernel node named after the composite, with the
composite's attributes and its body's operators (``body``: name and
attributes of each). Subclasses customise :meth:`JSONSerializer.kernel_attrs`.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 4))
>>> f = relay.Function([x], relay.nn.relu(x)).with_attr("global_symbol", "f0")
>>> from relaykit.transform import infer_type
>>> _ = infer_type(f)
>>> graph, consts = JSONSerializer().serialize(f, "f0")
>>> [(n["op"], n["name"]) for n in graph["nodes"]]
[('input', 'x'), ('kernel', 'nn.relu')]
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from relaykit.errors import CodegenError
from relaykit.ir.expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType
from relaykit.runtime.json_runtime import JSON_GRAPH_FORMAT, JSON_GRAPH_VERSION, JSONRuntimeBase
from relaykit.runtime.module import Module

from .c_source import flatten_types, region_symbol

__all__ = ["JSONSerializer", "json_attr_value", "make_json_codegen"]


def json_attr_value(value: Any) -> Any:
    """An attribute value in JSON form (tuples -> lists, Attrs -> objects)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"float": repr(value)}
    if isinstance(value, (tuple, list)):
        return [json_attr_value(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): json_attr_value(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return json_attr_value(value.item())
    return str(value)


class JSONSerializer:
    """Serialise partitioned functions to the JSON graph format."""

    def kernel_attrs(self, call: Call) -> dict[str, Any]:
        """The attributes written for a kernel node (operator or composite call)."""
        if isinstance(call.op, Op):
            return {k: json_attr_value(v) for k, v in call.attrs.items()}
        fn = call.op
        assert isinstance(fn, Function)
        return {
            k: json_attr_value(v)
            for k, v in fn.attrs.items()
            if k in ("Composite", "PartitionedFromPattern")
        }

    def kernel_body(self, call: Call) -> list[dict[str, Any]]:
        """The operators of a composite call, in order (empty for an operator call)."""
        if not isinstance(call.op, Function):
            return []
        return [
            {"op": n.op.name, "attrs": {k: json_attr_value(v) for k, v in n.attrs.items()}}
            for n in post_order(call.op.body)
            if isinstance(n, Call) and isinstance(n.op, Op)
        ]

    def kernel_inputs(self, call: Call, args: list[Any]) -> list[list[int]]:
        """The input entries of a kernel node, from the entries of the call's arguments
        (flattened in argument order by default)."""
        return [e for a in args for e in _flatten(a)]

    def serialize(
        self, func: Function, symbol: str
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The JSON graph (as a dict) and the constants of ``func``."""
        nodes: list[dict[str, Any]] = []
        values: dict[Expr, Any] = {}
        constants: dict[str, np.ndarray] = {}

        def fail(msg: str) -> CodegenError:
            return CodegenError(f"JSON codegen of function {symbol}: {msg}")

        def add(node: dict[str, Any], types: Sequence[TensorType]) -> list[list[int]]:
            node["shape"] = [list(t.shape) for t in types]
            node["dtype"] = [t.dtype for t in types]
            nodes.append(node)
            return [[len(nodes) - 1, k] for k in range(len(types))]

        for p in func.params:
            ty = p.checked_type
            if not isinstance(ty, TensorType):
                raise fail(f"parameter %{p.name_hint} has type {ty}; only tensors are supported")
            values[p] = add({"op": "input", "name": p.name_hint}, [ty])[0]
        for node in post_order(func.body, skip=lambda n: isinstance(n, (Function, Op))):
            if isinstance(node, Var):
                if node not in values:
                    raise fail(f"free variable %{node.name_hint}")
            elif isinstance(node, Constant):
                name = f"{symbol}_const_{len(constants)}"
                constants[name] = node.data.numpy()
                values[node] = add({"op": "const", "name": name}, flatten_types(node.checked_type))[
                    0
                ]
            elif isinstance(node, Call):
                if isinstance(node.op, GlobalVar):
                    raise fail(
                        f"calls of global functions (@{node.op.name_hint}) are not supported"
                    )
                ins = self.kernel_inputs(node, [values[a] for a in node.args])
                name = _kernel_name(node)
                if not isinstance(name, str):
                    raise fail("a call of a function literal that is not a composite")
                entry: dict[str, Any] = {
                    "op": "kernel",
                    "name": name,
                    "inputs": ins,
                    "attrs": self.kernel_attrs(node),
                }
                body = self.kernel_body(node)
                if body:
                    entry["body"] = body
                types = flatten_types(node.checked_type)
                entries = add(entry, types)
                values[node] = (
                    entries[0] if isinstance(node.checked_type, TensorType) else tuple(entries)
                )
            elif isinstance(node, Tuple):
                values[node] = tuple(values[f] for f in node.fields)
            elif isinstance(node, TupleGetItem):
                values[node] = values[node.tuple_value][node.index]
            else:
                raise fail(f"{type(node).__name__} nodes are not supported")
        graph = {
            "format": JSON_GRAPH_FORMAT,
            "version": JSON_GRAPH_VERSION,
            "symbol": symbol,
            "nodes": nodes,
            "heads": _flatten(values[func.body]),
        }
        return graph, constants


def _flatten(value: Any) -> list[list[int]]:
    if isinstance(value, tuple):
        return [e for v in value for e in _flatten(v)]
    return [value]


def make_json_codegen(
    runtime: type[JSONRuntimeBase], serializer: JSONSerializer | None = None
) -> Callable[[Function], Module]:
    """A ``relay.ext.<target>`` codegen: serialise the function, create ``runtime`` from it."""
    ser = serializer or JSONSerializer()

    def codegen(func: Function) -> Module:
        symbol = region_symbol(func)
        graph, constants = ser.serialize(func, symbol)
        text = json.dumps(graph, allow_nan=False, separators=(",", ":"))
        return runtime(symbol, text, constants)

    return codegen


def _kernel_name(call: Call) -> Any:
    """The operator's name, or the ``Composite`` name of a composite function's call."""
    if isinstance(call.op, Op):
        return call.op.name
    if isinstance(call.op, Function):
        return call.op.attrs.get("Composite")
    return None
