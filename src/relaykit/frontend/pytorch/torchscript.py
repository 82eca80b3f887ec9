"""``from_pytorch``: TorchScript graphs (``torch.jit.trace`` / ``torch.jit.script``) to Relay.

The module's graph is copied and inlined (the module itself is not changed and
not frozen), then walked once in order. ``prim::GetAttr`` chains from ``self``
name the parameters and buffers: each becomes a variable of ``main`` named by
its state-dict path (``layer1.0.conv1.weight``, as TVM names them) and its
value goes to ``params``. ``prim::Constant``, ``prim::ListConstruct`` and
``prim::TupleConstruct`` become Python values; ``aten::*`` nodes go through
the shared converter table. Before anything is converted, every node is
checked: all unsupported ops are reported at once.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from relaykit import op
from relaykit.errors import FrontendError
from relaykit.ir.expr import Call, Expr, If, Span, Tuple, TupleGetItem, Var
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType
from relaykit.runtime.ndarray import NDArray
from relaykit.text.spans import SourceName
from relaykit.transform.pass_infra import PassContext

from .common import build_module, converting, report_unsupported_nodes
from .packed import PACKED_PREFIX, quantized_tensor, unpack_params
from .quantized import convert_on_quantized, has_qtensor, unwrap_outputs
from .registry import (
    OpContext,
    const_value,
    dtype_name,
    lookup,
    numpy_dtype_name,
    op_key,
    require_torch,
    tensor_to_numpy,
)

__all__ = ["from_pytorch"]

#: prim:: nodes the walker handles itself
_PRIM = {
    "prim::Constant",
    "prim::GetAttr",
    "prim::ListConstruct",
    "prim::TupleConstruct",
    "prim::ListUnpack",
    "prim::TupleUnpack",
    "prim::NumToTensor",
    "prim::device",
    "prim::dtype",
    "prim::TupleIndex",
    "prim::unchecked_cast",
    "prim::RaiseException",
}


class _Module:
    """The value of a ``prim::GetAttr`` that names a submodule (its dotted path)."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path


def source_location(node: Any) -> str:
    """Where ``node`` comes from: the innermost frame of user code in its source range
    (frames inside torch itself are skipped), or ``""``."""
    try:
        text = str(node.sourceRange())
    except RuntimeError:  # pragma: no cover - nodes without a source range
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    frames = [ln for ln in lines if re.search(r"\(\d+\): ", ln)]  # traced: "file.py(12): fn"
    inside = os.path.dirname(require_torch().__file__)
    for ln in frames or lines:
        if not ln.startswith(inside):
            return ln
    return (frames or lines or [""])[0]


def _describe(node: Any) -> str:
    where = source_location(node)
    text = str(node).strip().split("\n", 1)[0]
    return f"{text}" + (f" (at {where})" if where else "")


class TorchScriptImporter:
    def __init__(
        self,
        module: Any,
        input_infos: Sequence[Any],
        custom_convert_map: Mapping[str, Callable[..., Any]] | None,
        default_dtype: str,
        friendly_names: bool,
        keep_quantized_weight: bool = False,
        preserve_scopes: bool = False,
    ) -> None:
        self.module = module
        self.input_infos = list(input_infos)
        self.custom = dict(custom_convert_map or {})
        self.default_dtype = default_dtype
        self.friendly_names = friendly_names
        self.keep_quantized_weight = keep_quantized_weight
        self.constants: dict[Var, np.ndarray] = {}
        self.preserve_scopes = preserve_scopes
        self.fill_spans = bool(PassContext.current().config.get("relay.frontend.fill_span", True))
        self.values: dict[Any, Any] = {}
        #: graph value -> (the value it is a view of, "slice" or "select", its arguments)
        self.views: dict[Any, tuple[Any, str, list[Any]]] = {}
        self.params: dict[str, NDArray] = {}
        self.param_vars: dict[str, Var] = {}
        # a traced or scripted function (ScriptFunction) has no state: only its inputs
        state_dict = getattr(module, "state_dict", None)
        self.state = dict(state_dict(keep_vars=True)) if callable(state_dict) else {}

    # -- the graph ------------------------------------------------------------------------
    def graph(self) -> Any:
        torch = require_torch()
        graph = getattr(self.module, "graph", None)
        if graph is None:
            raise FrontendError(
                "from_pytorch takes a TorchScript module (torch.jit.trace(model, inputs) or "
                f"torch.jit.script(model)), got {type(self.module).__name__}; for an nn.Module "
                "use torch.jit.trace first, or relaykit.frontend.from_exported_program"
            )
        graph = graph.copy()
        torch._C._jit_pass_inline(graph)
        rename_outputs(graph)
        return graph

    def check_supported(self, nodes: Iterable[Any]) -> None:
        found = (
            (node.kind(), node) for node in _all_nodes(nodes) if not self.supported(node.kind())
        )
        report_unsupported_nodes(found, _describe, "TorchScript graph")

    def supported(self, kind: str) -> bool:
        """Whether a node of ``kind`` converts (handled here, custom or in the table)."""
        if kind in _PRIM or kind in _CONTROL or kind in self.custom:
            return True
        if not kind.startswith(("aten::", "quantized::")):
            return False
        return lookup(op_key(kind))[0] is not None

    # -- inputs and parameters ---------------------------------------------------------------
    def bind_inputs(self, graph: Any) -> list[Var]:
        inputs = list(graph.inputs())
        has_self = bool(inputs) and inputs[0].type().kind() == "ClassType"
        if has_self:
            self.values[inputs[0]] = _Module("")
            inputs = inputs[1:]
        if len(inputs) != len(self.input_infos):
            raise FrontendError(
                f"the graph has {len(inputs)} inputs but input_infos describes "
                f"{len(self.input_infos)}: give one (name, shape) or (name, (shape, dtype)) "
                "per input, in order"
            )
        out = []
        for value, info in zip(inputs, self.input_infos, strict=True):
            name, shape, dtype = _parse_info(info)
            if dtype is None:
                dtype = _graph_dtype(value) or self.default_dtype
            var = Var(name, TensorType(shape, dtype))
            self.values[value] = var
            out.append(var)
        return out

    def param(self, path: str, value: Any) -> Any:
        if not hasattr(value, "detach"):
            return value  # a non-tensor attribute (an int, a list...)
        if getattr(value, "is_quantized", False):
            return quantized_tensor(value, lambda arr: self.new_param(path, arr))
        return self.new_param(path, tensor_to_numpy(value))

    def new_param(self, path: str, arr: np.ndarray) -> Var:
        """The parameter of ``main`` named after ``path`` holding ``arr``."""
        name = path.replace(".", "_") if self.friendly_names else path
        var = self.param_vars.get(name)
        if var is None:
            var = Var(name, TensorType(arr.shape, numpy_dtype_name(arr)))
            self.param_vars[name] = var
            self.params[name] = NDArray(arr.copy())
            self.constants[var] = arr
        return var

    def get_attr(self, node: Any) -> Any:
        owner = self.values[node.input()]
        if not isinstance(owner, _Module):
            raise FrontendError(f"prim::GetAttr on a value that is not a module: {_describe(node)}")
        attr = node.s("name")
        path = f"{owner.path}.{attr}" if owner.path else attr
        if node.output().type().kind() in ("TensorType",):
            value = self.state.get(path)
            if value is None:
                value = self.module
                for part in path.split("."):
                    value = getattr(value, part)
            return self.param(path, value)
        if node.output().type().kind() == "ClassType":
            if node.output().type().str().startswith(PACKED_PREFIX):
                obj = self.module
                for part in path.split("."):
                    obj = getattr(obj, part)
                return unpack_params(
                    obj, lambda suffix, arr: self.new_param(f"{path}.{suffix}", arr),
                    self.keep_quantized_weight,
                )  # fmt: skip
            return _Module(path)
        value = self.module
        for part in path.split("."):
            value = getattr(value, part)
        return self.param(path, value)

    # -- nodes -----------------------------------------------------------------------------
    def prim(self, node: Any, args: list[Any]) -> list[Any]:
        kind = node.kind()
        if kind == "prim::Constant":
            return [node.output().toIValue()]
        if kind == "prim::GetAttr":
            return [self.get_attr(node)]
        if kind in ("prim::ListUnpack", "prim::TupleUnpack"):
            seq = args[0]
            if isinstance(seq, Expr):
                return [TupleGetItem(seq, i) for i in range(node.outputsSize())]
            return list(seq)
        simple: dict[str, Callable[[], Any]] = {
            "prim::ListConstruct": lambda: list(args),
            "prim::TupleConstruct": lambda: tuple(args),
            "prim::TupleIndex": lambda: args[0][int(args[1])],
            "prim::NumToTensor": lambda: args[0],
            "prim::unchecked_cast": lambda: args[0],
            "prim::device": lambda: "cpu",
            "prim::dtype": lambda: OpContext(kind, "", self.default_dtype).dtype(args[0]),
        }
        fn = simple.get(kind)
        return [fn() if fn is not None else None]  # prim::RaiseException: not taken when traced

    def convert(self, node: Any, args: list[Any]) -> list[Any]:
        kind = node.kind()
        ctx = OpContext(kind, _describe(node), self.default_dtype)
        ctx.constants = self.constants
        if kind in self.custom:
            types = [ctx.dtype(a) if isinstance(a, Expr) else type(a).__name__ for a in args]
            result = self.custom[kind](args, types)
        else:
            fn, inplace = lookup(op_key(kind))
            if fn is None:  # pragma: no cover - check_supported reported it
                raise FrontendError(f"no converter for {kind}")
            key = op_key(kind)
            if kind.startswith("aten::") and has_qtensor(args):
                result = convert_on_quantized(ctx, key[:-1] if inplace else key, fn, args)
            else:
                result = fn(ctx, args)
            if inplace or (key.endswith("_") and not key.endswith("__")):
                # x.add_(y), x[:2].copy_(y): later uses of x (and of what x views) see it
                self.write_back(node.inputsAt(0), result, ctx)
            if kind in ("aten::slice", "aten::select") and isinstance(result, Expr):
                self.views[node.output()] = (node.inputsAt(0), kind, args[1:])
        n = node.outputsSize()
        if n == 1:
            return [result]
        return [result[i] for i in range(n)]

    def run_nodes(self, nodes: Iterable[Any]) -> None:
        """Convert ``nodes`` in order, binding each output in :attr:`values`."""
        for node in nodes:
            args = [self.values[v] for v in node.inputs()]
            kind = node.kind()
            with converting(node, _describe):
                if kind in _PRIM:
                    outs = self.prim(node, args)
                elif kind == "prim::If":
                    outs = self.if_node(node, args)
                elif kind == "prim::Loop":
                    outs = self.loop_node(node, args)
                else:
                    outs = self.convert(node, args)
            if self.fill_spans and kind not in _PRIM:
                _tag_spans(outs, {id(a) for a in _exprs(args)}, self.span_name(node))
            for value, out in zip(node.outputs(), outs, strict=True):
                self.values[value] = out

    def span_name(self, node: Any) -> str:
        """The source name of the spans of ``node``'s expressions: its module scope
        (``layer1.0.conv1``) with ``preserve_pytorch_scopes``, else its output's name
        (``aten::_convolution_0``, see :func:`rename_outputs`)."""
        if self.preserve_scopes:
            scope = node.scopeName()
            if scope:
                return scope.split("/")[-1].removeprefix("__module.")
        return node.outputsAt(0).debugName() if node.outputsSize() else node.kind()

    def run_block(self, block: Any, inputs: Sequence[Any] = ()) -> list[Any]:
        """The values a block returns, its parameters bound to ``inputs``."""
        for param, value in zip(block.inputs(), inputs, strict=True):
            self.values[param] = value
        self.run_nodes(block.nodes())
        return [self.values[v] for v in block.returnNode().inputs()]

    def if_node(self, node: Any, args: list[Any]) -> list[Any]:
        """``prim::If``: a condition known at import picks its block; a run-time condition
        becomes a Relay ``If`` over both blocks' results."""
        then_block, else_block = list(node.blocks())
        cond = const_value(args[0])
        if cond is not None:
            return self.run_block(then_block if bool(np.asarray(cond)) else else_block)
        saved = dict(self.values)  # in-place rebinding inside a branch stays in it
        then_outs = self.run_block(then_block)
        self.values = dict(saved)
        else_outs = self.run_block(else_block)
        self.values = saved
        if not then_outs:
            return []
        exprs = [_branch_value(a, b, node) for a, b in zip(then_outs, else_outs, strict=True)]
        if all(not isinstance(e, tuple) for e in exprs):
            return exprs  # both branches give the same Python values
        cond_expr = OpContext(node.kind(), "", self.default_dtype).expr(args[0])
        cond_expr = op.reshape(op.cast(cond_expr, "bool"), [])
        then_t = Tuple([e[0] if isinstance(e, tuple) else _as_expr(e) for e in exprs])
        else_t = Tuple([e[1] if isinstance(e, tuple) else _as_expr(e) for e in exprs])
        result = If(cond_expr, then_t, else_t)
        return [TupleGetItem(result, i) for i in range(len(exprs))]

    def loop_node(self, node: Any, args: list[Any]) -> list[Any]:
        """``prim::Loop`` with a trip count and conditions known at import: unrolled."""
        trip, cond, carried = args[0], args[1], list(args[2:])
        block = next(iter(node.blocks()))
        count = const_value(trip)
        i = 0
        while True:
            go = const_value(cond)
            if go is None or count is None:
                raise FrontendError(
                    "a loop whose trip count or condition is only known at run time is not "
                    "supported: relaykit unrolls loops whose bounds are known at import "
                    "(sizes of static inputs, constants)"
                )
            if not bool(np.asarray(go)) or i >= int(np.asarray(count)):
                return carried
            if i >= _MAX_UNROLL:
                raise FrontendError(f"a loop of more than {_MAX_UNROLL} iterations is not unrolled")
            outs = self.run_block(block, [i, *carried])
            cond, carried = outs[0], outs[1:]
            i += 1

    def write_back(self, value: Any, new: Any, ctx: OpContext) -> None:
        """Bind ``value`` to ``new`` and, when ``value`` is a slice or a selection of
        another tensor, write ``new`` into that tensor too (and so on up the chain)."""
        self.values[value] = new
        view = self.views.get(value)
        if view is None or not isinstance(new, Expr):
            return
        base_value, kind, vargs = view
        base = self.values[base_value]
        shape = list(ctx.shape(base))
        dim = ctx.axis(base, vargs[0])
        if kind == "aten::select":
            index = int(vargs[1]) % shape[dim]
            start, end, step = index, index + 1, 1
            new = op.expand_dims(new, dim)
        else:
            start, end, step = _bounds(vargs[1], vargs[2], vargs[3], shape[dim])
        begin = [0] * len(shape)
        stop = list(shape)
        strides = [1] * len(shape)
        begin[dim], stop[dim], strides[dim] = start, end, step
        region = [len(range(b, e, s)) for b, e, s in zip(begin, stop, strides, strict=True)]
        new = op.broadcast_to(op.cast(new, ctx.dtype(base)), region)
        as_expr = lambda v: ctx.expr(np.asarray(v, dtype="int64"))  # noqa: E731
        updated = op.strided_set(base, new, as_expr(begin), as_expr(stop), as_expr(strides))
        self.write_back(base_value, updated, ctx)

    def run(self) -> tuple[IRModule, dict[str, NDArray]]:
        graph = self.graph()
        nodes = list(graph.nodes())
        self.check_supported(nodes)
        inputs = self.bind_inputs(graph)
        self.run_nodes(nodes)
        outputs = [unwrap_outputs(self.values[v]) for v in graph.return_node().inputs()]
        result = outputs[0] if len(outputs) == 1 else tuple(outputs)
        result = _python_outputs_as_constants(result)
        mod = build_module(result, inputs, list(self.param_vars.values()), "the TorchScript graph")
        return mod, self.params


def rename_outputs(graph: Any) -> None:
    """Name each node's outputs ``<kind>_<n>`` (``aten::_convolution_0``), counting the
    nodes of each kind in order; a node with several outputs numbers them
    (``aten::max_pool2d_with_indices_0_1``). Constants, attributes and lists keep theirs."""
    counts: dict[str, int] = {}
    for node in _all_nodes(graph.nodes()):
        kind = node.kind()
        if kind in _PRIM:
            continue
        n = counts.get(kind, 0)
        counts[kind] = n + 1
        outputs = list(node.outputs())
        for i, value in enumerate(outputs):
            value.setDebugName(f"{kind}_{n}" if len(outputs) == 1 else f"{kind}_{n}_{i}")


def export_graph(graph: Any, folder: str) -> str:
    """Write ``graph`` (with its renamed outputs) as text to a new file in ``folder``."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"tvm_exported_c_graph_{time.strftime('%Y%m%d_%H%M%S')}.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(str(graph))
    return path


def _bounds(start: Any, end: Any, step: Any, size: int) -> tuple[int, int, int]:
    """``aten::slice``'s start, end and step as non-negative bounds within ``size``."""
    step = 1 if step is None else int(step)
    start = 0 if start is None else int(start)
    end = size if end is None else int(end)
    start = min(max(start + size if start < 0 else start, 0), size)
    end = min(max(end + size if end < 0 else end, 0), size)
    return start, max(start, end), step


def _exprs(values: Iterable[Any]) -> Iterable[Expr]:
    for v in values:
        if isinstance(v, Expr):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _exprs(v)


def _tag_spans(outs: Sequence[Any], known: set[int], name: str) -> None:
    """Give the expressions a node created (those reachable from its outputs that are
    not among its inputs and have no span yet) a span named ``name``."""
    span = Span(SourceName(name), 0, 0, 0, 0)
    stack = list(_exprs(outs))
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if id(e) in known or id(e) in seen or not isinstance(e, (Call, Tuple, TupleGetItem)):
            continue
        seen.add(id(e))
        if e.span is not None:
            continue
        object.__setattr__(e, "span", span)  # a node this converter just built
        if isinstance(e, Call):
            stack.extend(a for a in e.args if isinstance(a, Expr))
        elif isinstance(e, Tuple):
            stack.extend(e.fields)
        else:
            stack.append(e.tuple_value)


#: control flow the walker converts itself
_CONTROL = {"prim::If", "prim::Loop"}
_MAX_UNROLL = 10000


def _all_nodes(nodes: Iterable[Any]) -> Iterable[Any]:
    """``nodes`` and, depth first, the nodes of their blocks (If branches, loop bodies)."""
    for node in nodes:
        yield node
        for block in node.blocks():
            yield from _all_nodes(block.nodes())


def _as_expr(value: Any) -> Expr:
    if isinstance(value, Expr):
        return value
    return OpContext("prim::If", "", "float32").expr(value)


def _branch_value(a: Any, b: Any, node: Any) -> Any:
    """A branch output: the Python value both branches agree on, else the pair of
    expressions (Python numbers become constants)."""
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        try:
            if bool(np.all(np.asarray(a) == np.asarray(b))) and type(a) is type(b):
                return a
        except (TypeError, ValueError):
            pass
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        raise FrontendError(
            f"{_describe(node)}: the branches of a run-time condition give lists or tuples; "
            "only tensors and numbers can differ between the branches"
        )
    return (_as_expr(a), _as_expr(b))


def _python_outputs_as_constants(result: Any) -> Any:
    """Python numbers and bools a graph returns, as constant tensors (as TVM gives them)."""
    if isinstance(result, (bool, int, float, np.generic)):
        return _as_expr(result)
    if isinstance(result, (list, tuple)):
        return type(result)(_python_outputs_as_constants(r) for r in result)
    return result


def _is_nested(spec: Any) -> bool:
    """Whether a shape spec describes several tensors: ``((2, 4), (2, 4))``, ``[((2, 4),
    (2, 4)), ...]`` (a single ``(shape, dtype)`` pair is not)."""
    if not isinstance(spec, (tuple, list)) or not spec:
        return False
    shapes = [s for s in spec if isinstance(s, (tuple, list))]
    if len(spec) == 2 and len(shapes) == 1 and isinstance(spec[0], (tuple, list)):
        return _is_nested(spec[0])  # (shape, dtype)
    return bool(shapes)


def _parse_info(info: Any) -> tuple[str, tuple[int, ...], str | None]:
    try:
        name, spec = info
    except (TypeError, ValueError):
        raise FrontendError(
            f"input_infos entries are (name, shape) or (name, (shape, dtype)), got {info!r}"
        ) from None
    dtype = None
    if _is_nested(spec):
        raise FrontendError(
            f"input {name!r}: {spec!r} describes a tuple or list of tensors; relaykit's "
            "from_pytorch takes tensor inputs only: pass each tensor as its own input"
        )
    if (
        isinstance(spec, (tuple, list))
        and len(spec) == 2
        and isinstance(spec[0], (tuple, list))
        and not isinstance(spec[1], (int, np.integer))
    ):
        spec, dtype = spec
        dtype = dtype_name(dtype)
    try:
        shape = tuple(int(d) for d in spec)
    except (TypeError, ValueError):
        raise FrontendError(
            f"input {name!r}: the shape must be a list of ints (relaykit needs static shapes), "
            f"got {spec!r}"
        ) from None
    return str(name), shape, dtype


def _graph_dtype(value: Any) -> str | None:
    try:
        st = value.type().scalarType()
    except (AttributeError, RuntimeError):
        return None
    if st is None:
        return None
    return {"Float": "float32", "Double": "float64", "Long": "int64", "Int": "int32",
            "Bool": "bool", "Half": "float16", "Byte": "uint8", "Char": "int8"}.get(st)  # fmt: skip


def from_pytorch(
    script_module: Any,
    input_infos: Sequence[Any],
    custom_convert_map: Mapping[str, Callable[..., Any]] | None = None,
    default_dtype: str = "float32",
    use_parser_friendly_name: bool = False,
    keep_quantized_weight: bool = False,
    export_renamed_c_graph_path: str | None = None,
    preserve_pytorch_scopes: bool = False,
) -> tuple[IRModule, dict[str, NDArray]]:
    """See :func:`relaykit.frontend.pytorch.from_pytorch`.

    Each converted expression gets a span (unless the pass context sets
    ``relay.frontend.fill_span`` to False) named after its node's output
    (``aten::_convolution_0``) or, with ``preserve_pytorch_scopes``, its module scope
    (``layer1.0.conv1``). ``export_renamed_c_graph_path`` names a folder where the
    graph, with those output names, is written as text."""
    require_torch()
    importer = TorchScriptImporter(
        script_module,
        input_infos,
        custom_convert_map,
        default_dtype,
        use_parser_friendly_name,
        keep_quantized_weight,
        preserve_pytorch_scopes,
    )
    if export_renamed_c_graph_path is not None:
        export_graph(importer.graph(), export_renamed_c_graph_path)
    return importer.run()
