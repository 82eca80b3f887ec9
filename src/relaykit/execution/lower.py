"""Lowering ``main`` to a flat graph plan.

A symbolic run of ``main``: instead of values, every expression evaluates to
plan entries (a tuple of them for tuples). Operator calls append ``op``
nodes; calls of functions with a ``Compiler`` attribute append ``extern``
nodes for the backend; calls of other global functions and of function
literals (composite functions left on the host, closures) are inlined; ``let``
binds a name to entries. Constants become parameters ``p0``, ``p1``... The
walk uses an explicit stack, so deep graphs are fine. Control flow (``if``),
recursion and functions as values need the VM or the interpreter: they are a
clear :class:`~relaykit.errors.BuildError`.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 4))
>>> mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x * relay.const(2.0))))
>>> plan, params = lower_to_plan(mod)
>>> [(n.kind, n.name) for n in plan.nodes]
[('input', 'x'), ('param', 'p0'), ('op', 'multiply'), ('op', 'nn.relu')]
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from relaykit.errors import BuildError
from relaykit.ir.expr import Call, Constant, Function, GlobalVar, If, Var, checked_type_or_none
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op, default_registry, get_op
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op.define import OpPattern, make_attrs
from relaykit.runtime.threads import CONFIG_KEY, check_count, get_policy
from relaykit.transform.pass_infra import PassContext

from .evaluator import Activation, Environment, Evaluator, Task
from .graph_plan import EntrySpec, GraphPlan, PlanNode
from .memory_plan import plan_memory

__all__ = ["VIEW_OPS", "PlanLowering", "lower_to_plan", "region_ops"]

#: Operators whose output is a view of their input's storage (no data is moved).
VIEW_OPS = frozenset(
    {"reshape", "nn.batch_flatten", "squeeze", "expand_dims", "annotation.stop_fusion"}
)


def _flatten(value: Any) -> list[int]:
    out: list[int] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(reversed(v))
        elif isinstance(v, int):
            out.append(v)
        else:
            raise BuildError("a function value cannot be an input or output of the graph executor")
    return out


def region_ops(func: Function) -> tuple[str, ...]:
    """The operators of a partitioned function, composites as ``name(op, op...)``."""
    out: list[str] = []
    for n in post_order(func.body, skip=lambda e: isinstance(e, Function)):
        if isinstance(n, Call):
            if isinstance(n.op, Op):
                out.append(n.op.name)
            elif isinstance(n.op, Function):
                inner = [
                    m.op.name
                    for m in post_order(n.op.body)
                    if isinstance(m, Call) and isinstance(m.op, Op)
                ]
                name = n.op.attrs.get("Composite", "fn")
                out.append(f"{name}({', '.join(inner)})")
    return tuple(out)


def _describe(index: int, call: Call, name: str) -> str:
    types = []
    for a in call.args:
        t = checked_type_or_none(a)
        types.append(str(t) if t is not None else "?")
    attrs = ", ".join(f"{k}={v!r}" for k, v in call.attrs.items()) if call.attrs else ""
    where = f" at {call.span}" if call.span is not None else ""
    body = ", ".join(types + ([attrs] if attrs else []))
    return f"%{index} = {name}({body}){where}"


class PlanLowering(Evaluator):
    """A symbolic run of a function: values are plan entries (entry ids, tuples of
    them, closures); operator and backend calls append plan nodes; everything else
    (global and local functions, ``let``) is evaluated away. Control flow, recursion
    and global functions as values are a :class:`~relaykit.errors.BuildError`."""

    error = BuildError

    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.entries: list[EntrySpec] = []
        self.nodes: list[PlanNode] = []
        self.params: dict[str, np.ndarray] = {}
        self.const_entry: dict[int, int] = {}
        self.externs: dict[str, tuple[str, tuple[str, ...]]] = {}
        #: Float scalar constants by entry, and the node producing each op entry: what the
        #: clamp fusion looks at.
        self.scalars: dict[int, float] = {}
        self.producer: dict[int, PlanNode] = {}

    def new_entries(self, ty: Type | None, where: str) -> Any:
        """Fresh entries for a value of type ``ty`` (an id, or a tuple for a tuple type)."""
        if isinstance(ty, TensorType):
            self.entries.append(EntrySpec(ty.shape, ty.dtype))
            return len(self.entries) - 1
        if isinstance(ty, TupleType):
            return tuple(self.new_entries(t, where) for t in ty.fields)
        raise BuildError(f"{where} has type {ty}; the graph executor handles tensors and tuples")

    def add_input(self, param: Var, func_name: str) -> int:
        """A plan input for the parameter ``param`` of the lowered function."""
        ty = checked_type_or_none(param) or param.type_annotation
        if not isinstance(ty, TensorType):
            raise BuildError(
                f"input %{param.name_hint} of @{func_name} has type {ty}; graph executor inputs "
                "must be tensors"
            )
        e: int = self.new_entries(ty, f"input %{param.name_hint}")
        self.nodes.append(PlanNode("input", param.name_hint, outputs=(e,)))
        return e

    # -- hooks of the evaluator ----------------------------------------------------------

    def eval_constant(self, node: Constant) -> int:
        """A parameter ``p<i>``, one per constant node."""
        e = self.const_entry.get(id(node))
        if e is None:
            arr = node.data.numpy()
            e = self.new_entries(TensorType(arr.shape, arr.dtype.name), "a constant")
            name = f"p{len(self.params)}"
            self.params[name] = arr
            self.nodes.append(PlanNode("param", name, outputs=(e,)))
            self.const_entry[id(node)] = e
            if arr.ndim == 0 and arr.dtype.kind == "f":
                self.scalars[e] = float(arr)
        return e

    def apply_op(self, call: Call, op: Op, args: list[Any]) -> Any:
        """An ``op`` node; a tuple argument is passed flat, its size in ``groups``."""
        groups: list[int] = []
        inputs: list[int] = []
        for a in args:
            if isinstance(a, int):
                groups.append(-1)
                inputs.append(a)
            else:
                flat = _flatten(a)
                groups.append(len(flat))
                inputs.extend(flat)
        out = self.new_entries(checked_type_or_none(call), f"the call of {op.name}")
        desc = _describe(len(self.nodes), call, op.name)
        node = self._clamp(op.name, inputs, out, desc)
        if node is None:
            view = op.name in VIEW_OPS and isinstance(out, int) and len(inputs) >= 1
            node = PlanNode(
                "op",
                op.name,
                tuple(inputs),
                tuple(_flatten(out)),
                call.attrs,
                tuple(groups),
                view=view,
                desc=desc,
            )
        self.nodes.append(node)
        if isinstance(out, int):
            self.producer[out] = node
        return out

    def _clamp(self, name: str, inputs: list[int], out: Any, desc: str) -> PlanNode | None:
        """``minimum(maximum(x, lo), hi)`` (or ``maximum(minimum(x, hi), lo)``) with float
        scalar constants and ``lo <= hi`` -- ReLU6 as exporters write it -- as one ``clip``
        step reading ``x``, one pass over memory instead of two. The inner step stays in the
        plan for its other users; :func:`lower_to_plan` drops it when it has none."""
        other = {"minimum": "maximum", "maximum": "minimum"}.get(name)
        if other is None or len(inputs) != 2 or inputs[1] not in self.scalars:
            return None
        inner = self.producer.get(inputs[0])
        if (
            inner is None
            or inner.name != other
            or len(inner.inputs) != 2
            or inner.inputs[1] not in self.scalars
            or self.entries[inner.inputs[0]] != self.entries[inputs[0]]
        ):
            return None
        outer_c, inner_c = self.scalars[inputs[1]], self.scalars[inner.inputs[1]]
        lo, hi = (inner_c, outer_c) if name == "minimum" else (outer_c, inner_c)
        if not lo <= hi or self.entries[inputs[0]].dtype[:5] != "float":
            return None
        attrs = make_attrs(get_op("clip"), {"a_min": lo, "a_max": hi})
        return PlanNode("op", "clip", (inner.inputs[0],), (out,), attrs, (-1,), desc=desc)

    def is_extern(self, gv: GlobalVar, fn: Function) -> bool:
        """Functions with a ``Compiler`` attribute run in their backend's module."""
        return bool(fn.attrs.get("Compiler")) if fn.attrs else False

    def apply_extern(self, call: Call, gv: GlobalVar, fn: Function, args: list[Any]) -> Any:
        """An ``extern`` node calling the backend function's symbol."""
        info = self.externs.get(gv.name_hint)
        if info is None:
            symbol = fn.attrs.get("global_symbol") or gv.name_hint
            info = (str(symbol), region_ops(fn))
            self.externs[gv.name_hint] = info
        symbol, ops = info
        out = self.new_entries(checked_type_or_none(call), f"the call of @{gv.name_hint}")
        desc = _describe(len(self.nodes), call, "@" + gv.name_hint)
        self.nodes.append(
            PlanNode(
                "extern",
                symbol,
                tuple(i for a in args for i in _flatten(a)),
                tuple(_flatten(out)),
                compiler=str(fn.attrs["Compiler"]),
                region_ops=ops,
                desc=desc,
            )
        )
        return out

    def call_global(
        self, call: Call, gv: GlobalVar, fn: Function, args: list[Any], act: Activation
    ) -> Activation:
        """Host functions are inlined; recursion cannot be."""
        if act.is_evaluating(gv.name_hint):
            raise BuildError(
                f"@{gv.name_hint} is recursive; the graph executor cannot run recursion "
                "(use relay.create_executor('vm' or 'debug'))"
            )
        return super().call_global(call, gv, fn, args, act)

    def eval_global(self, gv: GlobalVar) -> Any:
        raise BuildError(
            f"@{gv.name_hint} is used as a value; the graph executor can only call global functions"
        )

    def enter_if(self, node: If, act: Activation, stack: list[Task]) -> None:
        raise BuildError(
            "the graph executor runs dataflow graphs and cannot run `if`"
            + (f" (at {node.span})" if node.span is not None else "")
            + "; run this module with relay.create_executor('vm' or 'debug')"
        )

    def enter_op(self, node: Op, act: Activation, stack: list[Task]) -> None:
        raise self.unsupported(node)

    def unsupported(self, node: Any) -> BuildError:
        return BuildError(f"the graph executor cannot run a {type(node).__name__} node")

    def not_callable(self, call: Call, value: Any) -> BuildError:
        return BuildError("a call of something that is not a function")

    def arity_error(self, call: Call, fn: Function, args: list[Any]) -> BuildError:
        return BuildError(
            f"a function of {len(fn.params)} parameters is called with {len(args)} arguments"
        )


def lower_to_plan(
    mod: IRModule, func_name: str = "main", inplace_ops: Any = None
) -> tuple[GraphPlan, dict[str, np.ndarray]]:
    """The memory-planned :class:`GraphPlan` of ``mod[func_name]`` and its parameters.

    ``mod`` must be type-checked. ``inplace_ops`` defaults to the elementwise and
    broadcast operators. A ``"relay.num_threads"`` option in the current
    ``PassContext`` sets the process's thread budget (docs/threads.md).
    """
    configured = PassContext.current().config.get(CONFIG_KEY)
    if configured is not None:
        get_policy().set_num_threads(check_count(configured, f"PassContext config {CONFIG_KEY!r}"))
    main = mod[func_name]
    low = PlanLowering(mod)
    env = {p: low.add_input(p, func_name) for p in main.params}
    value = low.run(main.body, Activation(Environment(env), None, func_name))
    heads = _flatten(value)
    entries, nodes, heads = _drop_unused_ops(low.entries, low.nodes, heads)
    if inplace_ops is None:
        inplace_ops = {n.name for n in nodes if n.kind == "op" and _elementwise(n.name)}
    entries, storage = plan_memory(entries, nodes, heads, inplace_ops)
    return GraphPlan(entries, nodes, storage, heads), low.params


def _drop_unused_ops(
    entries: list[EntrySpec], nodes: list[PlanNode], heads: list[int]
) -> tuple[list[EntrySpec], list[PlanNode], list[int]]:
    """The plan without the operator steps nothing reads (left behind by a fusion), their
    entries dropped and the rest renumbered."""
    used = set(heads)
    keep: list[PlanNode] = []
    for node in reversed(nodes):
        if node.kind == "op" and not used.intersection(node.outputs):
            continue
        used.update(node.inputs)
        keep.append(node)
    if len(keep) == len(nodes):
        return entries, nodes, heads
    keep.reverse()
    live = sorted({e for n in keep for e in (*n.inputs, *n.outputs)} | set(heads))
    new_id = {e: i for i, e in enumerate(live)}

    def renumber(ids: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(new_id[e] for e in ids)

    keep = [replace(n, inputs=renumber(n.inputs), outputs=renumber(n.outputs)) for n in keep]
    return [entries[e] for e in live], keep, [new_id[h] for h in heads]


def _elementwise(op_name: str) -> bool:
    """Elementwise or broadcast operators (TVM's ``TOpPattern`` <= BROADCAST)."""
    p = default_registry.get_attr(op_name, "TOpPattern")
    return isinstance(p, int) and p <= OpPattern.BROADCAST
