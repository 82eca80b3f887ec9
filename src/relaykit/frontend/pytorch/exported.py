"""FX graphs of aten ops to Relay: ``torch.export`` programs (``from_exported_program``)
and the graphs ``torch.compile`` gives relaykit's backend (:mod:`.dynamo`).

An exported program is first lowered to the core-aten op set with torch's own
decompositions (``ep.run_decompositions()``); each ``call_function`` node's
arguments are then placed in the order of its aten schema (keyword arguments
and defaults filled in), so the converters see the same argument lists as for
TorchScript nodes.

A symbolic size (an export with ``dynamic_shapes``) is pinned to the value it had
in the example inputs, or, with ``keep_symbolic=True``, becomes ``relay.Any()``:
the module then runs on the Relay VM (``relay.vm.compile``) for any size, sizes
read at run time (``sym_size``) being scalar expressions over ``shape_of``.
"""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from relaykit.errors import DynamicShapeError, FrontendError
from relaykit.ir.expr import Var
from relaykit.ir.module import IRModule
from relaykit.ir.types import AnyDim, TensorType
from relaykit.runtime.ndarray import NDArray

from .common import build_module, converting, report_unsupported_nodes
from .registry import (
    OpContext,
    dtype_name,
    lookup,
    numpy_dtype_name,
    op_key,
    require_torch,
    tensor_to_numpy,
)

__all__ = [
    "FxImporter",
    "from_exported_program",
    "node_key",
    "source_location",
    "static_shape",
    "symbolic_shape",
]

#: Python functions FX graphs call, by the converter they use
_PY_OPS = {
    operator.getitem: "getitem",
    operator.add: "add",
    operator.sub: "sub",
    operator.mul: "mul",
    operator.truediv: "div",
    operator.floordiv: "floor_divide",
    operator.neg: "neg",
    operator.eq: "eq",
    operator.ne: "ne",
    operator.lt: "lt",
    operator.le: "le",
    operator.gt: "gt",
    operator.ge: "ge",
}


def node_key(target: Any) -> str | None:
    """The converter key of an FX ``call_function`` target, or None."""
    if target in _PY_OPS:
        return _PY_OPS[target]
    schema = getattr(target, "_schema", None)
    if schema is not None:
        return op_key(schema.name)
    return None


def _target_name(target: Any) -> str:
    schema = getattr(target, "_schema", None)
    if schema is not None:
        overload = f".{schema.overload_name}" if schema.overload_name else ""
        return f"{schema.name}{overload}"
    return getattr(target, "__name__", str(target))


def source_location(node: Any) -> str:
    """The innermost user frame of an FX node's stack trace (``file:line in fn``)."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', trace)
    inside = os.path.dirname(require_torch().__file__)
    user = [f for f in frames if not f[0].startswith(inside)]
    if not (user or frames):
        return ""
    path, line, fn = (user or frames)[-1]
    return f"{path}:{line} in {fn}"


def _describe(node: Any) -> str:
    where = source_location(node)
    return f"%{node.name} = {_target_name(node.target)}" + (f" (at {where})" if where else "")


def static_shape(value: Any, what: str) -> tuple[int, ...]:
    """A tensor's (fake or real) shape with symbolic sizes pinned to their example value."""
    out = []
    for d in value.shape:
        if isinstance(d, int):  # not int(d) of a SymInt: that would specialise it
            out.append(d)
            continue
        hint = getattr(getattr(d, "node", None), "hint", None)
        if hint is None:
            raise DynamicShapeError(
                f"{what} has a symbolic size {d} with no example value: relaykit's shapes are "
                "static; export with concrete example inputs"
            )
        out.append(int(hint))
    return tuple(out)


def _normalize_args(target: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[Any]:
    schema = getattr(target, "_schema", None)
    if schema is None:
        return [*args, *kwargs.values()]
    out: list[Any] = []
    for i, arg in enumerate(schema.arguments):
        if i < len(args) and not arg.kwarg_only:
            out.append(args[i])
        elif arg.name in kwargs:
            out.append(kwargs[arg.name])
        elif arg.has_default_value():
            out.append(arg.default_value)
        else:
            out.append(None)
    return out


def _traced_shape(node: Any) -> tuple[int | None, ...] | None:
    """The node's output shape from its fake value: ints, None for a symbolic size."""
    val = node.meta.get("val")
    shape = getattr(val, "shape", None)
    if shape is None:
        return None
    concrete = require_torch().fx.experimental.symbolic_shapes.is_concrete_int
    return tuple(d if isinstance(d, int) else None if not concrete(d) else int(d) for d in shape)


def _unsupported(nodes: Iterable[Any]) -> Iterator[tuple[str, Any]]:
    """``(op name, node)`` for each node of ``nodes`` no converter takes."""
    for node in nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            continue
        key = node_key(node.target) if node.op == "call_function" else None
        if key is not None and lookup(key)[0] is not None:
            continue
        name = (
            _target_name(node.target) if node.op == "call_function" else f"{node.op} {node.target}"
        )
        yield name, node


class FxImporter:
    """Converts the ``call_function`` nodes of an FX graph; ``values`` maps each
    placeholder node to its Relay variable, constant or Python value."""

    def __init__(
        self,
        graph: Any,
        values: dict[Any, Any],
        default_dtype: str = "float32",
        constants: Mapping[Any, np.ndarray] | None = None,
    ):
        self.graph = graph
        self.values = dict(values)
        self.default_dtype = default_dtype
        #: the parameters' values, for converters that need a constant argument
        self.constants = dict(constants or {})

    def check_supported(self, nodes: Iterable[Any]) -> None:
        report_unsupported_nodes(_unsupported(nodes), _describe, "FX graph")

    def _arg(self, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return type(value)(self._arg(v) for v in value)
        if isinstance(value, Mapping):  # keyword arguments
            return {k: self._arg(v) for k, v in value.items()}
        if type(value).__name__ == "Node":
            return self.values[value]
        return value

    def convert(self, node: Any) -> Any:
        key = node_key(node.target)
        fn, inplace = lookup(key or "")
        if fn is None:  # pragma: no cover - check_supported reported it
            raise FrontendError(f"no converter for {_target_name(node.target)}")
        args = _normalize_args(node.target, self._arg(node.args), self._arg(node.kwargs))
        ctx = OpContext(_target_name(node.target), _describe(node), self.default_dtype)
        ctx.out_shape = _traced_shape(node)
        ctx.constants = self.constants
        result = fn(ctx, args)
        if inplace and node.args and type(node.args[0]).__name__ == "Node":
            self.values[node.args[0]] = result
        return result

    def get_attr(self, node: Any, owner: Any) -> Any:
        value = owner
        for part in str(node.target).split("."):
            value = getattr(value, part)
        return value

    def run(self, owner: Any = None) -> Any:
        """Convert every node; the value of the graph's output (a nested structure)."""
        nodes = list(self.graph.nodes)
        self.check_supported(nodes)
        for node in nodes:
            if node.op == "placeholder":
                if node not in self.values:
                    raise FrontendError(f"placeholder {node.name} has no value")
                continue
            if node.op == "output":
                return self._arg(node.args[0])
            with converting(node, _describe):
                if node.op == "get_attr":
                    self.values[node] = self.get_attr(node, owner)
                else:
                    self.values[node] = self.convert(node)
        raise FrontendError("the FX graph has no output node")


def symbolic_shape(value: Any, what: str) -> tuple[Any, ...]:
    """A tensor's shape with each symbolic size as ``relay.Any()`` (static sizes as ints)."""
    torch = require_torch()
    symbolic = [
        isinstance(d, torch.SymInt) and not torch.fx.experimental.symbolic_shapes.is_concrete_int(d)
        for d in value.shape
    ]
    pinned = static_shape(value, what)
    return tuple(AnyDim() if s else p for s, p in zip(symbolic, pinned, strict=True))


def _var_for(name: str, value: Any, keep_symbolic: bool) -> Var:
    dtype = dtype_name(value.dtype)
    what = f"input {name!r}"
    shape = symbolic_shape(value, what) if keep_symbolic else static_shape(value, what)
    return Var(name, TensorType(shape, dtype))


def from_exported_program(
    exported_program: Any,
    *,
    run_decompositions: bool = True,
    default_dtype: str = "float32",
    keep_symbolic: bool = False,
) -> tuple[IRModule, dict[str, NDArray]]:
    """See :func:`relaykit.frontend.pytorch.from_exported_program`."""
    torch = require_torch()
    if not isinstance(exported_program, torch.export.ExportedProgram):
        raise FrontendError(
            "from_exported_program takes a torch.export.ExportedProgram "
            f"(torch.export.export(model, args)), got {type(exported_program).__name__}"
        )
    ep = exported_program.run_decompositions() if run_decompositions else exported_program
    kinds = torch.export.graph_signature.InputKind
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    values: dict[Any, Any] = {}
    inputs: list[Var] = []
    param_vars: list[Var] = []
    params: dict[str, NDArray] = {}
    constants: dict[Var, np.ndarray] = {}
    for spec in ep.graph_signature.input_specs:
        node = placeholders[spec.arg.name]
        if spec.kind == kinds.USER_INPUT:
            val = node.meta.get("val")
            if hasattr(val, "shape"):
                var = _var_for(spec.arg.name, val, keep_symbolic)
                values[node] = var
                inputs.append(var)
            else:  # a non-tensor input: fixed to its example value by export
                values[node] = val
        elif spec.kind in (kinds.PARAMETER, kinds.BUFFER):
            tensor = ep.state_dict.get(spec.target)
            if tensor is None:
                tensor = ep.constants[spec.target]
            arr = tensor_to_numpy(tensor)
            var = Var(spec.target, TensorType(arr.shape, numpy_dtype_name(arr)))
            values[node] = var
            param_vars.append(var)
            params[spec.target] = NDArray(arr.copy())
            constants[var] = arr
        elif spec.kind == kinds.CONSTANT_TENSOR:
            values[node] = ep.constants[spec.target]
        else:
            raise FrontendError(
                f"exported program input {spec.arg.name!r} of kind {spec.kind.name} is not "
                "supported"
            )
    result = FxImporter(ep.graph, values, default_dtype, constants).run(ep.graph_module)
    outs = [
        r
        for r, spec in zip(result, ep.graph_signature.output_specs, strict=True)
        if spec.kind == torch.export.graph_signature.OutputKind.USER_OUTPUT
    ]
    body = outs[0] if len(outs) == 1 else outs
    mod = build_module(body, inputs, param_vars, "exported program")
    used = {p.name_hint for p in mod["main"].params}
    return mod, {k: v for k, v in params.items() if k in used}
