"""Turning one ONNX graph into a Relay function, node by node.

Each node's converter builds Relay calls over the values of its inputs; the
new calls are typed at once (so a bad node is reported by name, not later in
type inference), and a call whose inputs are all constants is evaluated right
away with the reference kernels. That folds the static shape chains of
exported models (``Shape -> Gather -> Concat -> Reshape``) into constants, so
converters that need a shape or an axis list simply ask ``ctx.value(...)``.
Both steps touch each new node once: import is linear in the graph's size. A
third does too: the chains exporters write for GELU and layer normalisation at
opsets without those operators become ``nn.gelu`` and ``nn.layer_norm`` as their
last node is converted (:meth:`GraphImporter.recognise`).

Folding is bounded like ``FoldConstant``: a value whose type holds a tensor
above the folding limit (``"relay.FoldConstant.max_bytes"``, 64 MiB by
default) is decided from its type, before any kernel runs, and stays a runtime
operator; every tensor type is checked against the limits of ``_limits``.
"""

from __future__ import annotations

from collections import ChainMap, Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from relaykit.errors import (
    DynamicShapeError,
    FrontendError,
    RelayKitError,
    UnsupportedOpError,
)
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    Tuple,
    TupleGetItem,
    TupleWrapper,
    Var,
    checked_type_or_none,
)
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType, Type
from relaykit.op.nn import gelu
from relaykit.runtime.ndarray import NDArray
from relaykit.transform.fold_constant import (
    fold_macs,
    largest_tensor_bytes,
    max_fold_bytes,
    max_fold_macs,
)
from relaykit.transform.idioms import (
    FLOAT_DTYPES,
    layer_norm_call,
    match_gelu,
    match_layer_norm,
)

from .limits import check_shape, check_type
from .narrow import narrow_outputs, widen_inputs
from .proto import onnx_dtype_name, tensor_to_numpy
from .registry import (
    NodeContext,
    call_converter,
    check_inputs,
    check_known_attributes,
    lookup,
    node_attributes,
)

__all__ = ["GraphImporter", "find_unsupported"]


class _TooLarge(Exception):
    """A value met while folding is above the folding limit."""


def _as_list(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _node_name(node: Any, index: int) -> str:
    return node.name or f"{node.op_type}_{index}"


def find_unsupported(graph: Any, opsets: Mapping[str, int]) -> dict[str, tuple[int, str]]:
    """``op_type -> (count, first node name)`` of every node without a converter."""
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for i, node in enumerate(graph.node):
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        opset = opsets.get(domain)
        if opset is None or lookup(domain, node.op_type, opset) is None:
            key = node.op_type if not domain else f"{domain}.{node.op_type}"
            if opset is None:
                key += f" (domain {domain!r} not imported)"
            counts[key] += 1
            first.setdefault(key, _node_name(node, i))
    return {k: (counts[k], first[k]) for k in counts}


def raise_unsupported(ops: dict[str, tuple[int, str]], opset: int) -> None:
    if not ops:
        return
    lines = [
        f"  {op}: {n} node{'s' if n > 1 else ''} (first: {first!r})"
        for op, (n, first) in sorted(ops.items(), key=lambda kv: (-kv[1][0], kv[0]))
    ]
    raise UnsupportedOpError(
        f"the model uses {len(ops)} operator type{'s' if len(ops) > 1 else ''} that relaykit "
        f"cannot import at opset {opset}:\n" + "\n".join(lines),
        ops,
    )


def _topological(nodes: list[Any], available: set[str]) -> list[int]:
    """Node indices with every input produced before use: the file's order when it is
    valid (the usual case), else a depth-first fix-up. A cycle is an error."""
    producer: dict[str, int] = {}
    for i, n in enumerate(nodes):
        for o in n.output:
            if o:
                producer[o] = i
    state = [0] * len(nodes)  # 0 new, 1 in progress, 2 done
    order: list[int] = []
    for start in range(len(nodes)):
        if state[start]:
            continue
        stack = [(start, False)]
        while stack:
            i, expanded = stack.pop()
            if expanded:
                state[i] = 2
                order.append(i)
                continue
            if state[i] == 2:
                continue
            state[i] = 1
            stack.append((i, True))
            for x in reversed(nodes[i].input):
                p = producer.get(x)
                if not x or x in available or p is None or p == i or state[p] == 2:
                    continue
                if state[p] == 1:
                    raise FrontendError(
                        f"node {_node_name(nodes[p], p)!r} ({nodes[p].op_type}) is part of a "
                        "cycle: the graph is not a DAG"
                    )
                stack.append((p, False))
    return order


def _kept(call: Call) -> bool:
    """QNN operators are never folded at import, even on constants (TVM's FoldConstant
    leaves them too): a quantized weight stays an integer constant with its
    ``qnn.dequantize`` beside it, which is what the passes folding QDQ pairs into QNN
    operators and the quantized backends look for."""
    return type(call.op) is Op and call.op.name.startswith("qnn.")


class GraphImporter:
    """Converts a ``GraphProto`` (with its opsets) to a Relay function."""

    def __init__(
        self,
        graph: Any,
        opsets: Mapping[str, int],
        shape: Mapping[str, Any] | None = None,
        dtype: Any = "float32",
        freeze_params: bool = True,
        bound_inputs: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        self.graph = graph
        self.bound_inputs = dict(bound_inputs or {})
        self.opsets = dict(opsets)
        self.shape_overrides = dict(shape or {})
        self.dtype = dtype
        self.freeze_params = freeze_params
        self.values: dict[str, Expr] = {}
        self.params: dict[str, NDArray] = {}
        self.dynamic: dict[Expr, bool] = {}
        #: the expressions standing for empty optionals (``Optional()`` with no input)
        self.empty_optionals: set[Expr] = set()
        #: the per-tensor folding limit in bytes (read once from the PassContext)
        self.max_fold_bytes = max_fold_bytes()
        self.max_fold_macs = max_fold_macs()
        #: values left unfolded because they are above the folding limit
        self.too_large: set[Expr] = set()
        #: whether a symbolic input dimension becomes ? (else a DynamicShapeError)
        self.dynamic_dims = True
        #: the chain each recognised idiom call stands for (what a longer match reads)
        self.chains: dict[Expr, Expr] = {}

    # -- typing and folding ----------------------------------------------------
    def _fail_type(self, ctx: NodeContext | None, message: str) -> FrontendError:
        where = ctx.where if ctx is not None else "the graph"
        return FrontendError(f"{where}: {message}")

    def type_of(self, expr: Expr, ctx: NodeContext | None = None) -> Type:
        """The type of ``expr``, inferring only the nodes that have none yet."""
        t = checked_type_or_none(expr)
        if t is not None:
            return t
        try:
            return infer_type_local(expr)
        except RelayKitError as err:  # a type error, or a bad attribute met by a relation
            raise self._fail_type(ctx, str(err).split("\n", 1)[0]) from None

    def _is_dynamic(self, expr: Expr) -> bool:
        memo = self.dynamic
        if expr in memo:
            return memo[expr]
        for node in post_order(expr, skip=lambda n: n in memo or type(n) is Op):
            if type(node) is Constant:
                memo[node] = False
            elif type(node) is Var:
                memo[node] = True
            elif type(node) is Call:
                memo[node] = _kept(node) or any(memo[a] for a in node.args)
            elif type(node) is Tuple:
                memo[node] = any(memo[f] for f in node.fields)
            elif type(node) is TupleGetItem:
                memo[node] = memo[node.tuple_value]
            else:
                memo[node] = True
        return memo[expr]

    def _evaluate(self, expr: Expr, memo: dict[Expr, Any], ctx: NodeContext) -> Any:
        for node in post_order(expr, skip=lambda n: n in memo or type(n) is Op):
            if type(node) is Constant:
                memo[node] = node.data.numpy()
            elif type(node) is Call:
                ty = checked_type_or_none(node)
                size = largest_tensor_bytes(ty)
                if size is None or size > self.max_fold_bytes:
                    raise _TooLarge
                if fold_macs(node, ty) > self.max_fold_macs:
                    raise _TooLarge
                args = [memo[a] for a in node.args]
                op = node.op
                if type(op) is not Op:
                    raise ctx.fail(f"cannot evaluate a call of {type(op).__name__} at import")
                kernel = op.get_attr("FCompute")
                try:
                    with np.errstate(all="ignore"):
                        memo[node] = kernel(args, node.attrs)
                except RelayKitError as err:
                    raise ctx.fail(f"cannot evaluate {op.name} at import: {err}") from None
                except Exception as err:
                    raise ctx.fail(
                        f"cannot evaluate {op.name} at import: {type(err).__name__}: {err}"
                    ) from None
            elif type(node) is Tuple:
                memo[node] = tuple(memo[f] for f in node.fields)
            elif type(node) is TupleGetItem:
                memo[node] = memo[node.tuple_value][node.index]
        return memo[expr]

    def finish(self, expr: Any, ctx: NodeContext, memo: dict[Expr, Any]) -> Expr:
        """Type ``expr`` and fold it to a constant when it depends on no input."""
        if isinstance(expr, TupleWrapper):
            expr = expr.astuple()
        if not isinstance(expr, Expr):
            raise ctx.fail(f"converter returned {type(expr).__name__}, not a relay expression")
        ty = self.type_of(expr, ctx)
        check_type(ty, ctx.where)
        if isinstance(expr, (Constant, Var)) or self._is_dynamic(expr):
            return expr
        size = largest_tensor_bytes(ty)
        try:
            if size is not None and size > self.max_fold_bytes:
                raise _TooLarge
            value = self._evaluate(expr, memo, ctx)
        except _TooLarge:  # a runtime operator, as if it depended on an input
            self.dynamic[expr] = True
            self.too_large.add(expr)
            return expr
        if isinstance(ty, TensorType):
            arr = np.asarray(value)
            if arr.dtype.name != ty.dtype or arr.shape != ty.shape:
                raise ctx.fail(f"folding gave {arr.dtype}{list(arr.shape)}, expected {ty}")
            folded = Constant(np.array(arr, order="C"))
            self.dynamic[folded] = False
            return folded
        return expr

    # -- the graph ---------------------------------------------------------------
    def _input_type(self, vi: Any) -> TensorType:
        name = vi.name
        t = vi.type
        if t.WhichOneof("value") != "tensor_type":
            raise FrontendError(
                f"graph input {name!r} is a {t.WhichOneof('value') or 'value of unknown type'}; "
                "relaykit imports tensor inputs only"
            )
        tt = t.tensor_type
        if isinstance(self.dtype, Mapping) and name in self.dtype:
            dtype = str(self.dtype[name])
        elif tt.elem_type:
            dtype = onnx_dtype_name(tt.elem_type, f"graph input {name!r}")
        else:
            dtype = str(self.dtype)
        if self.shape_overrides.get(name) is not None:
            # None (or relay.Any()) leaves that dimension to run time
            given = tuple(
                AnyDim() if d is None or isinstance(d, AnyDim) else int(d)
                for d in self.shape_overrides[name]
            )
            check_shape(given, f"graph input {name!r} (from shape=)")
            return TensorType(given, dtype)
        if not tt.HasField("shape"):
            raise FrontendError(
                f"graph input {name!r} has no shape; pass it with "
                f"from_onnx(model, shape={{{name!r}: (...)}})"
            )
        dims: list[Any] = []
        for k, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value >= 0:
                dims.append(int(d.dim_value))
            elif self.dynamic_dims:  # a symbolic dimension ("batch"): known when it runs
                dims.append(AnyDim())
            else:
                label = d.dim_param or "?"
                raise DynamicShapeError(
                    f"graph input {name!r} has a dynamic dimension {k} ({label!r}); pass a "
                    f"static shape with from_onnx(model, shape={{{name!r}: (...)}})"
                )
        check_shape(dims, f"graph input {name!r}")
        return TensorType(dims, dtype)

    def import_inputs(self) -> list[Var]:
        inits = {t.name for t in self.graph.initializer}
        params: list[Var] = []
        for t in self.graph.initializer:
            arr = tensor_to_numpy(t, f"initializer {t.name!r}")
            # Integer initializers are shapes, axes and indices, not weights: always constants.
            if self.freeze_params or arr.dtype.kind in "iub":
                c = Constant(arr)
                self.values[t.name] = c
            else:
                v = Var(t.name, TensorType(arr.shape, arr.dtype.name))
                infer_type_local(v)
                self.values[t.name] = v
                self.params[t.name] = NDArray(arr)
        for t in self.graph.sparse_initializer:
            raise FrontendError(f"sparse initializer {t.values.name!r} is not supported yet")
        for vi in self.graph.input:
            if vi.name in inits:
                continue
            if vi.type.WhichOneof("value") in ("sequence_type", "optional_type"):
                if vi.name not in self.bound_inputs and vi.name in self.shape_overrides:
                    value, vs = self._pinned_value(vi.name, vi.type, self.shape_overrides[vi.name])
                    self.values[vi.name] = value
                    params.extend(vs)
                    continue
                self.values[vi.name] = self._bound_value(vi)
                continue
            if vi.name in self.bound_inputs:
                want = self._input_type(vi)
                arr = np.asarray(self.bound_inputs[vi.name])
                if arr.shape != want.shape:
                    raise FrontendError(
                        f"graph input {vi.name!r} is {want}, got a value of shape {arr.shape}"
                    )
                self.values[vi.name] = Constant(np.array(arr, dtype=want.dtype, order="C"))
                continue
            var = Var(vi.name, self._input_type(vi))
            infer_type_local(var)
            self.values[vi.name] = var
            params.append(var)
        return params + [self.values[n] for n in self.params]  # type: ignore[misc]

    def empty_optional(self) -> Tuple:
        """A new empty optional: an empty tuple that the importer remembers as one."""
        t = Tuple([])
        infer_type_local(t)
        self.empty_optionals.add(t)
        return t

    def _pinned_value(self, name: str, tp: Any, pin: Any) -> tuple[Expr, list[Var]]:
        """A sequence or optional input whose structure ``shape=`` pins: a sequence of
        element shapes ``[(2, 3), (4, 3)]`` is a tuple of that many tensor parameters
        ``name_0, name_1, ...``; an optional pinned to ``None`` is empty, else it holds
        the value its pin describes. Returns the value and its parameters."""
        kind = tp.WhichOneof("value")
        where = f"graph input {name!r} (from shape=)"
        if kind == "optional_type":
            if pin is None:
                return self.empty_optional(), []
            return self._pinned_value(name, tp.optional_type.elem_type, pin)
        if kind == "sequence_type":
            if not isinstance(pin, (list, tuple)) or not all(
                isinstance(p, (list, tuple)) for p in pin
            ):
                raise FrontendError(
                    f"{where} is a sequence: pin it with a list of element shapes, "
                    "e.g. shape={name: [(2, 3), (4, 3)]}"
                )
            fields: list[Expr] = []
            params: list[Var] = []
            for k, p in enumerate(pin):
                value, vs = self._pinned_value(f"{name}_{k}", tp.sequence_type.elem_type, p)
                fields.append(value)
                params.extend(vs)
            t = Tuple(fields)
            infer_type_local(t)
            return t, params
        if kind != "tensor_type":
            raise FrontendError(f"{where} holds a {kind or 'value of unknown type'}")
        elem = tp.tensor_type.elem_type
        dtype = onnx_dtype_name(elem, where) if elem else str(self.dtype)
        dims = tuple(AnyDim() if d is None else int(d) for d in pin)
        check_shape(dims, where)
        var = Var(name, TensorType(dims, dtype))
        infer_type_local(var)
        return var, [var]

    def _bound_value(self, vi: Any) -> Expr:
        """A sequence or optional input. A sequence is a tuple of a length fixed at
        import, and whether an optional holds a value is decided at import: such an input
        must be bound (``const_inputs={name: [array, ...]}``, or None for an empty
        optional)."""
        kind = vi.type.WhichOneof("value")
        if vi.name not in self.bound_inputs:
            what = "a sequence" if kind == "sequence_type" else "an optional"
            raise DynamicShapeError(
                f"graph input {vi.name!r} is {what}; relaykit holds sequences as tuples "
                "of a length fixed at import and decides optionals at import: pin its "
                f"structure with from_onnx(model, shape={{{vi.name!r}: [shape, ...]}}) (a "
                "list of element shapes; None for an empty optional) or bind it with "
                f"const_inputs={{{vi.name!r}: ...}}"
            )
        return self._constant_value(vi.name, vi.type, self.bound_inputs[vi.name])

    def _constant_value(self, name: str, tp: Any, value: Any) -> Expr:
        kind = tp.WhichOneof("value")
        where = f"graph input {name!r}"
        if kind == "optional_type":
            if value is None:
                return self.empty_optional()
            return self._constant_value(name, tp.optional_type.elem_type, value)
        if kind == "sequence_type":
            if isinstance(value, np.ndarray) or not isinstance(value, (list, tuple)):
                raise FrontendError(f"{where} is a sequence: bind it to a list of arrays")
            fields = [self._constant_value(name, tp.sequence_type.elem_type, v) for v in value]
            t = Tuple(fields)
            infer_type_local(t)
            return t
        if kind != "tensor_type":
            raise FrontendError(f"{where} holds a {kind or 'value of unknown type'}")
        dtype = None
        if tp.tensor_type.elem_type:
            dtype = onnx_dtype_name(tp.tensor_type.elem_type, where)
        arr = np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)
        c = Constant(np.array(arr, order="C"))
        return c

    def convert_nodes(self) -> None:
        nodes = list(self.graph.node)
        default_opset = self.opsets.get("", 1)
        raise_unsupported(find_unsupported(self.graph, self.opsets), default_opset)
        for i in _topological(nodes, set(self.values)):
            self.convert_node(nodes[i], i)

    def _node_inputs(self, node: Any, ctx: NodeContext) -> list[Expr | None]:
        inputs: list[Expr | None] = []
        for k, name in enumerate(node.input):
            if not name:
                inputs.append(None)
                continue
            value = self.values.get(name)
            if value is None:
                raise ctx.fail(
                    f"input {k} reads tensor {name!r}, which no node, graph input or "
                    "initializer produces"
                )
            inputs.append(value)
        return inputs

    def convert_node(self, node: Any, index: int) -> None:
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        opset = self.opsets[domain]
        ctx = NodeContext(self, node, _node_name(node, index), opset)
        fn = lookup(domain, node.op_type, opset)
        assert fn is not None  # checked up front by find_unsupported
        inputs = self._node_inputs(node, ctx)
        check_inputs(ctx, domain, inputs)
        attrs, given = node_attributes(ctx, domain)
        check_known_attributes(fn, ctx, given)
        try:
            inputs, narrow = widen_inputs(ctx, inputs)
            out = call_converter(fn, ctx, inputs, attrs)
            if narrow:
                out = narrow_outputs(ctx, _as_list(out), narrow)
        except FrontendError:
            raise
        except RelayKitError as err:
            raise ctx.fail(f"{type(err).__name__}: {err}") from None
        except (TypeError, ValueError, IndexError, KeyError, ArithmeticError) as err:
            raise ctx.fail(f"cannot convert: {type(err).__name__}: {err}") from None
        self._bind_outputs(node, ctx, _as_list(out))

    def _bind_outputs(self, node: Any, ctx: NodeContext, outs: list[Any]) -> None:
        memo: dict[Expr, Any] = {}
        for name, expr in zip(node.output, outs, strict=False):
            if not name:
                continue
            if expr is None:
                raise ctx.unsupported(f"output {name!r}")
            try:
                self.values[name] = self.recognise(self.finish(expr, ctx, memo))
            except FrontendError:
                raise
            except RelayKitError as err:
                raise ctx.fail(f"{type(err).__name__}: {err}") from None
            except ArithmeticError as err:  # a type relation met numbers it cannot use
                raise ctx.fail(f"cannot type its output: {type(err).__name__}: {err}") from None
        if len(outs) < len([o for o in node.output if o]):
            missing = [o for o in node.output[len(outs) :] if o]
            if missing:
                raise ctx.unsupported(f"output {missing[0]!r}")

    def recognise(self, value: Expr) -> Expr:
        """``value`` as ``nn.layer_norm`` (over the last axis) or ``nn.gelu`` when it ends
        such a chain, by the shared recognisers of :mod:`relaykit.transform.idioms` (exact
        matches only: results are unchanged to float rounding), else ``value``. Torch
        writes these chains below opsets 17 (LayerNormalization) and 20 (Gelu). A layer
        norm matched at its division is matched again, longer, at the scale and shift
        after it: the chain a recognised call stands for is kept in :attr:`chains`."""
        if type(value) is not Call or type(value.op) is not Op:
            return value
        name = value.op.name
        if name not in ("multiply", "add", "divide"):
            return value
        ty = checked_type_or_none(value)
        if not isinstance(ty, TensorType) or ty.dtype not in FLOAT_DTYPES:
            return value
        probe = value
        if any(a in self.chains for a in value.args):
            args = [self.chains.get(a, a) for a in value.args]
            probe = Call(value.op, args, value.attrs, span=value.span)
        new: Expr | None = None
        m = match_layer_norm(probe, ty)
        if m is not None and m.axis == len(ty.shape) - 1:
            new = layer_norm_call(m, ty)
        elif name == "multiply":
            x = match_gelu(probe)
            new = None if x is None else gelu(x)
        if new is None:
            return value
        self.type_of(new)
        self.chains[new] = probe
        return new

    def output_expr(self) -> Expr:
        outs = []
        for vi in self.graph.output:
            value = self.values.get(vi.name)
            if value is None:
                raise FrontendError(
                    f"graph output {vi.name!r} is not produced by any node, input or initializer"
                )
            outs.append(value)
        if not outs:
            raise FrontendError("the graph has no outputs")
        return outs[0] if len(outs) == 1 else Tuple(outs)

    def run_subgraph(self, graph: Any, inputs: list[Expr], ctx: NodeContext) -> list[Expr]:
        """Convert a control-flow body with its inputs bound to ``inputs``; outer values
        stay visible. Returns the expressions of the body's outputs."""
        if len(inputs) != len(graph.input):
            raise ctx.fail(f"the body takes {len(graph.input)} inputs, got {len(inputs)}")
        child = GraphImporter(graph, self.opsets, None, self.dtype, self.freeze_params)
        child.dynamic = self.dynamic
        child.empty_optionals = self.empty_optionals
        child.too_large = self.too_large
        child.max_fold_bytes, child.max_fold_macs = self.max_fold_bytes, self.max_fold_macs
        child.values = ChainMap({}, self.values)  # type: ignore[assignment]
        for t in graph.initializer:
            child.values[t.name] = Constant(tensor_to_numpy(t, f"initializer {t.name!r}"))
        for vi, value in zip(graph.input, inputs, strict=True):
            child.values[vi.name] = value
        raise_unsupported(find_unsupported(graph, self.opsets), self.opsets.get("", 1))
        nodes = list(graph.node)
        for i in _topological(nodes, set(child.values)):
            child.convert_node(nodes[i], i)
        outs = []
        for vi in graph.output:
            produced = child.values.get(vi.name)
            if produced is None:
                raise ctx.fail(f"the body's output {vi.name!r} is not produced")
            outs.append(produced)
        return outs

    def run(self) -> tuple[IRModule, dict[str, NDArray]]:
        params = self.import_inputs()
        self.convert_nodes()
        body = self.output_expr()
        mod = IRModule.from_expr(Function(params, body))
        # The model's output names, for the built module's outputs (index order unchanged).
        mod = mod.with_attr("output_tensor_names", [vi.name for vi in self.graph.output])
        return mod, dict(self.params)
