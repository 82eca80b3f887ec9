"""Import a frozen TensorFlow graph: ``from_tensorflow(graph_def) -> (mod, params)``.

The graph's inputs are its ``Placeholder`` nodes and every node named in ``shape``:
such a node becomes a Relay input of that shape and what feeds it is not imported
(so ``shape={"DecodeJpeg/contents": (299, 299, 3)}`` feeds the decoded image of a
graph that starts by decoding a JPEG; a string input or constant named so becomes a
``uint8`` input, which the ``Decode*`` ops pass through). ``Const`` nodes become
parameters (``params``, by node name; scalars stay inline constants). Only what the
outputs depend on is imported, in dependency order, with an explicit stack; a node
whose inputs are all known at import (static shape chains: ``Shape -> StridedSlice
-> Pack -> Reshape``) is evaluated at once, bounded like ``FoldConstant``.

>>> import relaykit.frontend.tensorflow as tfe
>>> "MatMul" in tfe.supported_ops()
True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from relaykit.errors import DynamicShapeError, FrontendError, RelayKitError, UnsupportedOpError
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import (
    Constant,
    Expr,
    Function,
    If,
    Tuple,
    TupleGetItem,
    TupleWrapper,
    Var,
)
from relaykit.ir.module import IRModule
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType
from relaykit.op import not_equal as op_not_equal
from relaykit.runtime.ndarray import NDArray
from relaykit.transform.fold_constant import fold_constant
from relaykit.transform.infer_type import InferType

from .functions import CALL_OPS, COND_OPS, function_graph
from .graphdef import node_attrs, split_input, tensor_to_numpy
from .registry import CONVERTERS, NodeContext

__all__ = ["from_tensorflow", "supported_ops"]

#: ops whose output type attribute names the dtype of a node fed as an input
_DTYPE_ATTRS = ("dtype", "T", "DstT", "out_type", "Tout")
#: TVM's convert_config defaults
_DEFAULT_CONFIG = {"use_dense": True, "use_nt_batch_matmul": True}
#: variable ops: a frozen graph has none
_NOT_FROZEN = {"Variable", "VariableV2", "VarHandleOp", "ReadVariableOp", "Assign"}
_SOURCES = {"Const", "Placeholder", "PlaceholderWithDefault"}
#: TensorFlow 1 conditionals (what freezing lowers tf.cond to), taken on known predicates
_SWITCHING = {"Switch", "Merge"}


class _Dead:
    """The value of a branch a ``Switch`` does not take (and of all that reads it)."""

    def __repr__(self) -> str:
        return "<dead branch>"


DEAD = _Dead()
#: the outputs of a node on a branch not taken
_DEAD_NODE: list[Any] = []


def supported_ops() -> list[str]:
    """The TensorFlow ops ``from_tensorflow`` converts (besides Const and Placeholder)."""
    return sorted(CONVERTERS)


def _as_graph_def(graph: Any) -> Any:
    if hasattr(graph, "as_graph_def") and not hasattr(graph, "node"):
        graph = graph.as_graph_def()
    if not hasattr(graph, "node"):
        raise FrontendError(
            f"from_tensorflow expects a GraphDef (tf.compat.v1.GraphDef), got a "
            f"{type(graph).__name__}; freeze a TF2 function with "
            "convert_variables_to_constants_v2(f).graph.as_graph_def()"
        )
    return graph


class GraphImporter:
    """One GraphDef to one Relay function (see the module's docstring)."""

    def __init__(
        self,
        graph: Any,
        layout: str | None,
        shape: Mapping[str, Sequence[int]] | None,
        outputs: Sequence[str] | None,
        config: Mapping[str, Any] | None,
    ) -> None:
        self.graph = _as_graph_def(graph)
        layout = layout or "NHWC"  # TVM's tutorials pass None for the default
        if layout not in ("NHWC", "NCHW"):
            raise FrontendError(f"layout must be 'NHWC' or 'NCHW', got {layout!r}")
        self.layout = layout
        # "name:0" (the tensor) names the node "name" as well
        self.shape = {
            k[:-2] if k.endswith(":0") else k: [int(d) for d in v] for k, v in (shape or {}).items()
        }
        self.outputs = list(outputs) if outputs is not None else None
        self.config = {**_DEFAULT_CONFIG, **dict(config or {})}
        self.nodes: dict[str, Any] = {}
        for node in self.graph.node:
            self.nodes[node.name] = node
        unknown = [k for k in self.shape if k not in self.nodes]
        if unknown:
            raise FrontendError(
                f"shape names {unknown}, which are not nodes of the graph; name the inputs "
                "by node name"
            )
        #: a node's outputs: expressions (None: a string constant; DEAD: a branch not
        #: taken), or _DEAD_NODE
        self.values: dict[str, list[Any]] = {}
        self.known: dict[Expr, np.ndarray] = {}
        self.inputs: list[Var] = []
        self.params: dict[str, NDArray] = {}
        #: names bound before the walk (a function's arguments) and the prefix of the
        #: parameters made here (a function's call node)
        self.bound: set[str] = set()
        self.prefix = ""
        library = getattr(self.graph, "library", None)
        self.functions: dict[str, Any] = {
            f.signature.name: f for f in (library.function if library is not None else [])
        }

    # -- the walk ------------------------------------------------------------------
    def _output_refs(self) -> list[tuple[str, int | None]]:
        if self.outputs is None:
            if not len(self.graph.node):
                raise FrontendError("the graph has no nodes")
            return [(self.graph.node[-1].name, None)]
        refs: list[tuple[str, int | None]] = []
        for name in self.outputs:
            parsed = split_input(name)
            if parsed is None or (parsed[0] not in self.nodes and parsed[0] not in self.bound):
                raise FrontendError(f"output {name!r} is not a node of the graph")
            refs.append((parsed[0], parsed[1] if ":" in name else None))
        return refs

    def _is_cut(self, name: str) -> bool:
        return name in self.shape or self.nodes[name].op in _SOURCES

    def _order(self, roots: list[str]) -> list[str]:
        """The nodes the roots depend on, each after its inputs (explicit stack)."""
        state: dict[str, int] = {}
        order: list[str] = []
        stack = [(r, False) for r in reversed(roots) if r not in self.bound]
        while stack:
            name, done = stack.pop()
            if done:
                state[name] = 2
                order.append(name)
                continue
            if name in state:
                continue
            state[name] = 1
            stack.append((name, True))
            if self._is_cut(name):
                continue
            node = self.nodes[name]
            for ref in node.input:
                parsed = split_input(ref)
                if parsed is None:
                    continue
                src = parsed[0]
                if src in self.bound:
                    continue
                if src not in self.nodes:
                    raise FrontendError(f"node {name!r} reads {ref!r}, which is not in the graph")
                if state.get(src) == 1:
                    raise UnsupportedOpError(
                        f"node {name!r} ({node.op}) is part of a loop; relaykit imports graphs "
                        "without TensorFlow 1 control flow (while loops)",
                        {node.op: (1, name)},
                    )
                if src not in state:
                    stack.append((src, False))
        return order

    def _check_supported(self, order: list[str]) -> None:
        counts: Counter[str] = Counter()
        first: dict[str, str] = {}
        for name in order:
            node = self.nodes[name]
            handled = CALL_OPS | COND_OPS | _SWITCHING
            if self._is_cut(name) or node.op in CONVERTERS or node.op in handled:
                continue
            counts[node.op] += 1
            first.setdefault(node.op, name)
        if not counts:
            return
        lines = [
            f"  {op}: {n} node{'s' if n > 1 else ''} (first: {first[op]})"
            for op, n in counts.most_common()
        ]
        hint = "supply the graph's inputs by name in shape= to skip what feeds them"
        if set(counts) & _NOT_FROZEN:
            hint = (
                "the graph is not frozen: freeze it (convert_variables_to_constants, or "
                "convert_variables_to_constants_v2 for a tf.function)"
            )
        raise UnsupportedOpError(
            f"the TensorFlow graph uses {len(counts)} operator{'s' if len(counts) > 1 else ''} "
            "relaykit cannot convert:\n" + "\n".join(lines) + f"\n{hint}",
            {op: (n, first[op]) for op, n in counts.items()},
        )

    # -- sources -------------------------------------------------------------------
    def _input_var(self, node: Any, attrs: dict[str, Any]) -> Var:
        dtype = next((attrs[k] for k in _DTYPE_ATTRS if isinstance(attrs.get(k), str)), None)
        if dtype is None or dtype == "string":
            dtype = "uint8"  # an encoded image fed decoded (TVM's convention)
        dims: Any
        if node.name in self.shape:
            dims = self.shape[node.name]
        else:
            dims = attrs.get("shape")
            if dims is None or any(d < 0 for d in dims):
                raise DynamicShapeError(
                    f"input {node.name!r} has the shape {dims} (unknown sizes); give it a "
                    f"static one: from_tensorflow(graph, shape={{{node.name!r}: (...)}})"
                )
        var = Var(node.name, TensorType(tuple(dims), dtype))
        self.inputs.append(var)
        return var

    def _const(self, node: Any, attrs: dict[str, Any]) -> Expr | None:
        arr = tensor_to_numpy(node.attr["value"].tensor, f"node {node.name!r} (Const)")
        if arr.dtype == object:
            return None  # a string: usable only by the ops that read strings
        if arr.dtype.kind == "c":
            raise FrontendError(f"node {node.name!r} (Const): complex constants are not supported")
        if arr.ndim == 0:
            return Constant(np.array(arr))
        name = self.prefix + node.name
        var = Var(name, TensorType(arr.shape, arr.dtype.name if arr.dtype != bool else "bool"))
        self.known[var] = arr
        self.params[name] = NDArray(np.ascontiguousarray(arr))
        return var

    # -- conversion ----------------------------------------------------------------
    def _input_exprs(self, node: Any) -> list[Any]:
        exprs: list[Any] = []
        for ref in node.input:
            parsed = split_input(ref)
            if parsed is None:
                continue
            src, idx = parsed
            outs = self.values[src]
            if outs is _DEAD_NODE:
                exprs.append(DEAD)
                continue
            if idx >= len(outs):
                raise FrontendError(
                    f"node {node.name!r} reads output {idx} of {src!r}, which has {len(outs)}"
                )
            value = outs[idx]
            if value is None:
                raise FrontendError(
                    f"node {node.name!r} ({node.op}) reads the string constant {src!r}; "
                    f"feed it decoded instead: from_tensorflow(graph, shape={{{src!r}: ...}})"
                )
            exprs.append(value)
        return exprs

    def _run(self, node: Any, attrs: dict[str, Any], inputs: list[Expr]) -> list[Expr]:
        ctx = NodeContext(node, attrs, inputs, self.known, self.layout, self.config)
        try:
            out = CONVERTERS[node.op](ctx)
        except FrontendError:
            raise
        except RelayKitError as err:  # an operator refusing its arguments
            raise ctx.fail(str(err).split("\n", 1)[0]) from None
        except Exception as err:  # a converter's own failure still names the node
            raise ctx.fail(
                f"its conversion failed ({type(err).__name__}: {err}); this is a bug in the "
                "converter or a case it does not handle: please report it with the graph"
            ) from err
        if isinstance(out, TupleWrapper):
            out = [out[i] for i in range(out.size)]
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        for o in outs:
            if not isinstance(o, Expr):
                raise ctx.fail(f"the converter returned a {type(o).__name__}, not an expression")
            try:
                infer_type_local(o)
            except FrontendError:
                raise
            except Exception as err:
                raise ctx.fail(str(err).split("\n", 1)[0]) from None
        return outs

    def _convert(self, name: str) -> None:
        node = self.nodes[name]
        attrs = node_attrs(node)
        if name in self.shape or node.op in ("Placeholder", "PlaceholderWithDefault"):
            self.values[name] = [self._input_var(node, attrs)]
            return
        if node.op == "Const":
            self.values[name] = [self._const(node, attrs)]
            return
        inputs = self._input_exprs(node)
        if node.op == "Merge":  # the input of the branch taken, and its index
            live = [(i, e) for i, e in enumerate(inputs) if e is not DEAD]
            first = [live[0][1], Constant(np.array(live[0][0], dtype="int32"))] if live else None
            self.values[name] = first or _DEAD_NODE
            return
        if any(e is DEAD for e in inputs):
            self.values[name] = _DEAD_NODE
            return
        if node.op == "Switch":
            self.values[name] = self._switch(node, inputs)
            return
        if node.op in CALL_OPS:
            self.values[name] = list(self._call(node, attrs.get("f", ""), inputs))
            return
        if node.op in COND_OPS:
            self.values[name] = list(self._cond(node, attrs, inputs))
            return
        outs = self._run(node, attrs, inputs)
        passed = all(any(o is e for e in inputs) for o in outs)
        known = [self._known_value(e) for e in inputs]
        if inputs and not passed and all(v is not None for v in known):
            consts: list[Expr] = [Constant(np.array(v, order="C")) for v in known]
            folded = [fold_constant(o) for o in self._run(node, attrs, consts)]
            if all(isinstance(f, Constant) for f in folded):
                outs = folded
        self.values[name] = list(outs)

    def _known_value(self, expr: Expr) -> np.ndarray | None:
        if isinstance(expr, Constant):
            return expr.data.numpy()
        return self.known.get(expr)

    def _switch(self, node: Any, inputs: list[Expr]) -> list[Any]:
        """``[output_false, output_true]``: the data on the side the predicate takes."""
        pred = self._known_value(inputs[1])
        if pred is None:
            raise UnsupportedOpError(
                f"node {node.name!r} (Switch) branches on a value computed at run time "
                "(TensorFlow 1 control flow, which freezing makes of tf.cond); freeze with "
                "convert_variables_to_constants_v2(func, lower_control_flow=False) to keep "
                "conditionals as If, which relaykit imports",
                {"Switch": (1, node.name)},
            )
        return [DEAD, inputs[0]] if np.asarray(pred).any() else [inputs[0], DEAD]

    def _cond(self, node: Any, attrs: dict[str, Any], inputs: list[Expr]) -> list[Expr]:
        """``If``/``StatelessIf``: the branch chosen at import when the condition is known,
        else a Relay ``if`` over both branches (run it with the VM)."""
        cond, args = inputs[0], inputs[1:]
        value = self._known_value(cond)
        if value is not None:
            branch = "then_branch" if np.asarray(value).any() else "else_branch"
            return self._call(node, attrs.get(branch, ""), args)
        then = self._call(node, attrs.get("then_branch", ""), args, "then/")
        other = self._call(node, attrs.get("else_branch", ""), args, "else/")
        ty = infer_type_local(cond)
        if not isinstance(ty, TensorType) or ty.shape != ():
            raise FrontendError(
                f"node {node.name!r} ({node.op}): the condition has the type {ty}; relaykit "
                "takes a scalar condition"
            )
        if ty.dtype != "bool":
            cond = op_not_equal(cond, Constant(np.zeros((), dtype=ty.dtype)))
        chosen = If(cond, Tuple(then), Tuple(other))
        return [TupleGetItem(chosen, i) for i in range(len(then))]

    def _call(self, node: Any, fname: str, inputs: list[Expr], scope: str = "") -> list[Expr]:
        """The function ``fname`` converted in place, its arguments bound to ``inputs``."""
        fdef = self.functions.get(fname)
        if fdef is None:
            raise FrontendError(
                f"node {node.name!r} ({node.op}) calls {fname!r}, which is not in the "
                "graph's function library"
            )
        graph, args, rets = function_graph(fdef, getattr(self.graph, "library", None))
        if len(args) != len(inputs):
            raise FrontendError(
                f"node {node.name!r} ({node.op}) passes {len(inputs)} inputs to "
                f"{fdef.signature.name!r}, which takes {len(args)}"
            )
        child = GraphImporter(graph, self.layout, None, rets, self.config)
        child.prefix = f"{self.prefix}{node.name}/{scope}"
        child.known, child.params, child.functions = self.known, self.params, self.functions
        for arg, expr in zip(args, inputs, strict=True):
            child.values[arg] = [expr]
            child.bound.add(arg)
        return child.convert()

    def convert(self) -> list[Expr]:
        """The outputs' expressions (every node they depend on converted)."""
        refs = self._output_refs()
        order = self._order([name for name, _ in refs if name not in self.bound])
        self._check_supported(order)
        for name in order:
            self._convert(name)
        return self._output_exprs(refs)

    def _output_exprs(self, refs: list[tuple[str, int | None]]) -> list[Expr]:
        outs: list[Expr] = []
        for name, idx in refs:
            values = self.values[name]
            chosen = values if idx is None else values[idx : idx + 1]
            if values is _DEAD_NODE or any(v is DEAD for v in chosen):
                raise FrontendError(f"output {name!r} is on a branch the graph does not take")
            if idx is not None and idx >= len(values):
                raise FrontendError(f"output {name}:{idx}: the node has {len(values)} outputs")
            for v in chosen:
                if v is None:
                    raise FrontendError(f"output {name!r} is a string constant")
                outs.append(v)
        return outs

    def run(self) -> tuple[IRModule, dict[str, NDArray]]:
        outs = self.convert()
        if not outs:
            raise FrontendError("the graph's output node produces no tensor; name outputs=")
        body = outs[0] if len(outs) == 1 else Tuple(outs)
        used = set(free_vars(body))
        position = {n.name: i for i, n in enumerate(self.graph.node)}
        inputs = sorted((v for v in self.inputs if v in used), key=lambda v: position[v.name_hint])
        params = [v for v in free_vars(body) if v in self.known]
        mod = InferType()(IRModule.from_expr(Function([*inputs, *params], body)))
        kept = {p.name_hint: self.params[p.name_hint] for p in params}
        return mod, kept


def from_tensorflow(
    graph: Any,
    layout: str | None = "NHWC",
    shape: Mapping[str, Sequence[int]] | None = None,
    outputs: Sequence[str] | None = None,
    convert_config: Mapping[str, Any] | None = None,
) -> tuple[IRModule, dict[str, NDArray]]:
    """Import a frozen TensorFlow ``GraphDef`` (TVM's ``relay.frontend.from_tensorflow``).

    ``shape`` maps input node names to static shapes (any node named there becomes an
    input and what feeds it is skipped); ``outputs`` names the output tensors (default:
    the graph's last node); ``layout="NCHW"`` runs convolutions and pooling in NCHW
    (the graph's inputs and outputs keep TensorFlow's layout); ``convert_config``
    takes TVM's ``use_dense`` and ``use_nt_batch_matmul`` flags.

    >>> import tensorflow as tf  # doctest: +SKIP
    >>> g = tf.Graph()  # doctest: +SKIP
    >>> with g.as_default():  # doctest: +SKIP
    ...     x = tf.compat.v1.placeholder(tf.float32, [1, 4], name="x")
    ...     y = tf.nn.relu(x, name="y")
    >>> mod, params = from_tensorflow(g.as_graph_def(), shape={"x": (1, 4)})  # doctest: +SKIP
    """
    return GraphImporter(graph, layout, shape, outputs, convert_config).run()
