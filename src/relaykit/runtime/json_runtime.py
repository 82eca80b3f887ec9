"""Base of JSON-graph runtimes: parse a region's JSON once, bind kernels, run.

A JSON backend serialises each partitioned function to a small graph
(:mod:`relaykit.execution.codegen.json_graph` writes it)::

    {"format": "relaykit.json_graph", "version": 1, "symbol": "...",
     "nodes": [{"op": "input", "name": "x", "shape": [[1, 8]], "dtype": ["float32"]},
               {"op": "const", "name": "w", ...},
               {"op": "kernel", "name": "nn.dense", "inputs": [[0, 0], [1, 0]],
                "attrs": {...}, "shape": [[1, 4]], "dtype": ["float32"]}],
     "heads": [[2, 0]]}

A runtime subclasses :class:`JSONRuntimeBase` with a ``type_key`` and a
``kernels`` table (node name -> factory). The graph is parsed and every node's
kernel resolved when the module is created; ``bind_function`` then allocates
the intermediate buffers and binds each kernel to its arrays once, so a run
is a loop over prepared closures. A kernel factory takes ``(node, inputs,
outputs)`` and returns a no-argument callable that writes the outputs. Every
binding owns its buffers (a kernel's private buffers included), so executors,
and threads of one executor, never share memory: a kernel keeps no state
outside what its factory allocates.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from relaykit.errors import ArtifactCorruptError, BackendExecutionError, ExecutionError

from .c_module import TensorSpec, array_caller, check_arrays
from .module import Module, ModuleBlob

__all__ = [
    "JSON_GRAPH_FORMAT",
    "JSON_GRAPH_VERSION",
    "JSONNode",
    "JSONGraph",
    "KernelFactory",
    "JSONRuntimeBase",
]

JSON_GRAPH_FORMAT = "relaykit.json_graph"
JSON_GRAPH_VERSION = 1


@dataclass(frozen=True)
class JSONNode:
    """One node: ``op`` is "input", "const" or "kernel"; ``name`` the op, composite or
    tensor name; ``body`` the ops of a composite (``[{"op": .., "attrs": ..}]``)."""

    op: str
    name: str
    inputs: tuple[tuple[int, int], ...]
    attrs: Mapping[str, Any]
    outputs: tuple[TensorSpec, ...]
    body: tuple[Mapping[str, Any], ...] = ()


def _malformed(why: str) -> ArtifactCorruptError:
    return ArtifactCorruptError(f"malformed JSON graph: {why}")


@dataclass(frozen=True)
class JSONGraph:
    symbol: str
    nodes: tuple[JSONNode, ...]
    heads: tuple[tuple[int, int], ...]

    @property
    def input_nodes(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n.op == "input"]

    @staticmethod
    def parse(text: str) -> JSONGraph:
        """Parse and check a JSON graph; malformed text raises ArtifactCorruptError."""
        try:
            obj = json.loads(text)
            if obj.get("format") != JSON_GRAPH_FORMAT or obj.get("version") != JSON_GRAPH_VERSION:
                raise _malformed(
                    f"format {obj.get('format')!r} version {obj.get('version')!r} is not "
                    f"{JSON_GRAPH_FORMAT!r} version {JSON_GRAPH_VERSION}"
                )
            nodes: list[JSONNode] = []
            for i, n in enumerate(obj["nodes"]):
                op = str(n["op"])
                if op not in ("input", "const", "kernel"):
                    raise _malformed(f"node {i} has unknown kind {op!r}")
                inputs = tuple((int(a), int(b)) for a, b in n.get("inputs", []))
                for a, b in inputs:
                    if not 0 <= a < i or b < 0:
                        raise _malformed(f"node {i} reads entry ({a}, {b}) not defined before it")
                outs = tuple(
                    TensorSpec(tuple(int(d) for d in s), str(t))
                    for s, t in zip(n["shape"], n["dtype"], strict=True)
                )
                for a, b in inputs:
                    if b >= len(nodes[a].outputs):
                        raise _malformed(f"node {i} reads output {b} of node {a}, which has fewer")
                nodes.append(
                    JSONNode(
                        op,
                        str(n["name"]),
                        inputs,
                        dict(n.get("attrs", {})),
                        outs,
                        tuple(n.get("body", ())),
                    )
                )
            heads = tuple((int(a), int(b)) for a, b in obj["heads"])
            for a, b in heads:
                if not (0 <= a < len(nodes) and 0 <= b < len(nodes[a].outputs)):
                    raise _malformed(f"head ({a}, {b}) is not an entry of the graph")
            return JSONGraph(str(obj["symbol"]), tuple(nodes), heads)
        except ArtifactCorruptError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise ArtifactCorruptError(f"malformed JSON graph: {err}") from None


KernelFactory = Callable[[JSONNode, Sequence[np.ndarray], Sequence[np.ndarray]], Callable[[], Any]]


class JSONRuntimeBase(Module):
    """A runtime module running one JSON graph with the kernels of ``kernels``."""

    type_key: ClassVar[str] = "json"
    #: The Python module whose import registers this type's loader.
    provider: ClassVar[str] = ""
    #: Node name (operator or composite name) -> kernel factory.
    kernels: ClassVar[Mapping[str, KernelFactory]] = {}

    def __init__(self, symbol: str, graph_json: str, constants: Mapping[str, np.ndarray]) -> None:
        super().__init__()
        self.symbol = symbol
        self.graph_json = graph_json
        self.constants = {k: np.asarray(v, order="C") for k, v in constants.items()}
        self.graph = JSONGraph.parse(graph_json)
        self._factories: list[KernelFactory | None] = []
        for i, node in enumerate(self.graph.nodes):
            if node.op == "kernel":
                factory = self.kernels.get(node.name)
                if factory is None:
                    raise ExecutionError(
                        f"the {self.type_key} runtime has no kernel for {node.name!r} "
                        f"(node {i} of {symbol}); it has: {', '.join(sorted(self.kernels))}"
                    )
                self._factories.append(factory)
            else:
                if node.op == "const" and node.name not in self.constants:
                    raise ArtifactCorruptError(f"constant {node.name!r} of {symbol} is missing")
                self._factories.append(None)
        self.input_specs = [self.graph.nodes[i].outputs[0] for i in self.graph.input_nodes]
        self.output_specs = [self.graph.nodes[a].outputs[b] for a, b in self.graph.heads]

    # -- functions --------------------------------------------------------------------------
    def function_names(self) -> list[str]:
        return [self.symbol]

    def _own_function(self, name: str) -> Callable[..., Any] | None:
        if name != self.symbol:
            return None

        return array_caller(self, name, self.input_specs, self.output_specs)

    def bind_function(
        self, name: str, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]
    ) -> Callable[[], Any]:
        if name != self.symbol:
            return super().bind_function(name, inputs, outputs)
        owner = f"function {name}"
        ins = check_arrays(inputs, self.input_specs, "input", owner)
        outs = check_arrays(outputs, self.output_specs, "output", owner)
        graph = self.graph
        # Entries that are heads write straight into the caller's output arrays.
        head_of: dict[tuple[int, int], np.ndarray] = {}
        copies: list[tuple[np.ndarray, tuple[int, int]]] = []
        for (a, b), out in zip(graph.heads, outs, strict=True):
            if graph.nodes[a].op == "kernel" and (a, b) not in head_of:
                head_of[(a, b)] = out
            else:
                copies.append((out, (a, b)))
        values: dict[tuple[int, int], np.ndarray] = {}
        steps: list[Callable[[], Any]] = []
        input_iter = iter(ins)
        for i, node in enumerate(graph.nodes):
            if node.op == "input":
                values[(i, 0)] = next(input_iter)
                continue
            if node.op == "const":
                values[(i, 0)] = self.constants[node.name]
                continue
            node_outs = []
            for k, spec in enumerate(node.outputs):
                arr = head_of.get((i, k))
                node_outs.append(np.empty(spec.shape, spec.dtype) if arr is None else arr)
                values[(i, k)] = node_outs[-1]
            node_ins = [values[e] for e in node.inputs]
            factory = self._factories[i]
            assert factory is not None
            steps.append(factory(node, node_ins, node_outs))
        for out, entry in copies:
            src = values[entry]
            steps.append(functools.partial(np.copyto, out, src))
        kind, symbol = self.type_key, self.symbol

        def run() -> None:
            try:
                for step in steps:
                    step()
            except BackendExecutionError:
                raise
            except Exception as err:
                raise BackendExecutionError(
                    f"{kind} runtime function {symbol} failed: {type(err).__name__}: {err}"
                ) from err

        return run

    # -- saving -----------------------------------------------------------------------------
    def save_blob(self) -> ModuleBlob:
        return ModuleBlob(
            self.type_key,
            meta={"symbol": self.symbol},
            files={"graph.json": self.graph_json.encode()},
            arrays=dict(self.constants),
            provider=self.provider,
        )

    @classmethod
    def load_blob(cls, blob: ModuleBlob) -> JSONRuntimeBase:
        return cls(str(blob.meta["symbol"]), blob.files["graph.json"].decode("utf-8"), blob.arrays)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.symbol}, {len(self.graph.nodes)} nodes)"
