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

from typing import Any

import numpy as np

from relaykit.errors import BuildError
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    checked_type_or_none,
)
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op, default_registry
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op.define import OpPattern

from .graph_plan import EntrySpec, GraphPlan, PlanNode
from .interpreter import _Env as Env
from .memory_plan import plan_memory

__all__ = ["lower_to_plan", "VIEW_OPS", "region_ops"]

#: Operators whose output is a view of their input's storage (no data is moved).
VIEW_OPS = frozenset(
    {"reshape", "nn.batch_flatten", "squeeze", "expand_dims", "annotation.stop_fusion"}
)

_ENTER, _APPLY, _RETURN, _LET_BODY, _COPY = range(5)


class _Closure:
    __slots__ = ("func", "env")

    def __init__(self, func: Function, env: _Env | None) -> None:
        self.func = func
        self.env = env


class _Env(Env):
    __slots__ = ()
    unbound_error = BuildError


class _Activation:
    __slots__ = ("env", "memo", "chain")

    def __init__(self, env: _Env, chain: tuple[str, ...]) -> None:
        self.env = env
        self.memo: dict[int, Any] = {}
        self.chain = chain


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


def _describe(index: int, call: Call, name: str, arg_types: list[str]) -> str:
    attrs = ", ".join(f"{k}={v!r}" for k, v in call.attrs.items()) if call.attrs else ""
    where = f" at {call.span}" if call.span is not None else ""
    body = ", ".join(arg_types + ([attrs] if attrs else []))
    return f"%{index} = {name}({body}){where}"


class _Lowerer:
    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.entries: list[EntrySpec] = []
        self.nodes: list[PlanNode] = []
        self.params: dict[str, np.ndarray] = {}
        self.const_entry: dict[int, int] = {}
        self.externs: dict[str, tuple[str, tuple[str, ...]]] = {}

    def new_entries(self, ty: Type | None, where: str) -> Any:
        if isinstance(ty, TensorType):
            self.entries.append(EntrySpec(ty.shape, ty.dtype))
            return len(self.entries) - 1
        if isinstance(ty, TupleType):
            return tuple(self.new_entries(t, where) for t in ty.fields)
        raise BuildError(f"{where} has type {ty}; the graph executor handles tensors and tuples")

    def constant(self, c: Constant) -> int:
        e = self.const_entry.get(id(c))
        if e is None:
            arr = c.data.numpy()
            e = self.new_entries(TensorType(arr.shape, arr.dtype.name), "a constant")
            name = f"p{len(self.params)}"
            self.params[name] = arr
            self.nodes.append(PlanNode("param", name, outputs=(e,)))
            self.const_entry[id(c)] = e
        return e

    def extern_info(self, gv: GlobalVar, fn: Function) -> tuple[str, tuple[str, ...]]:
        info = self.externs.get(gv.name_hint)
        if info is None:
            symbol = fn.attrs.get("global_symbol") or gv.name_hint
            info = (str(symbol), region_ops(fn))
            self.externs[gv.name_hint] = info
        return info

    def call(self, call: Call, args: list[Any], act: _Activation) -> Any:
        """Lower a call of an operator or a backend function; None means: inline it."""
        op = call.op
        types = [
            str(checked_type_or_none(a)) if checked_type_or_none(a) is not None else "?"
            for a in call.args
        ]
        if type(op) is Op:
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
            desc = _describe(len(self.nodes), call, op.name, types)
            view = op.name in VIEW_OPS and isinstance(out, int) and len(inputs) >= 1
            self.nodes.append(
                PlanNode(
                    "op",
                    op.name,
                    tuple(inputs),
                    tuple(_flatten(out)),
                    call.attrs,
                    tuple(groups),
                    view=view,
                    desc=desc,
                )
            )
            return out
        if type(op) is GlobalVar:
            fn = self.mod[op.name_hint]
            compiler = fn.attrs.get("Compiler") if fn.attrs else None
            if compiler:
                symbol, ops = self.extern_info(op, fn)
                out = self.new_entries(checked_type_or_none(call), f"the call of @{op.name_hint}")
                desc = _describe(len(self.nodes), call, "@" + op.name_hint, types)
                self.nodes.append(
                    PlanNode(
                        "extern",
                        symbol,
                        tuple(i for a in args for i in _flatten(a)),
                        tuple(_flatten(out)),
                        compiler=str(compiler),
                        region_ops=ops,
                        desc=desc,
                    )
                )
                return out
        return None

    def run(self, root: Expr, act: _Activation) -> Any:
        stack: list[tuple[Any, ...]] = [(root, act, _ENTER)]
        while stack:
            task = stack.pop()
            node, act, stage = task[0], task[1], task[2]
            memo = act.memo
            if stage == _ENTER:
                if id(node) in memo:
                    continue
                t = type(node)
                if t is Var:
                    memo[id(node)] = act.env.lookup(node)
                elif t is Constant:
                    memo[id(node)] = self.constant(node)
                elif t is Function:
                    memo[id(node)] = _Closure(node, act.env)
                elif t is Call or t is Tuple:
                    stack.append((node, act, _APPLY))
                    kids = node.args if t is Call else node.fields
                    for k in reversed(kids):
                        if id(k) not in memo:
                            stack.append((k, act, _ENTER))
                    if t is Call and type(node.op) not in (Op, GlobalVar):
                        stack.append((node.op, act, _ENTER))
                elif t is TupleGetItem:
                    stack.append((node, act, _APPLY))
                    stack.append((node.tuple_value, act, _ENTER))
                elif t is Let:
                    stack.append((node, act, _LET_BODY))
                    stack.append((node.value, act, _ENTER))
                elif t is If:
                    raise BuildError(
                        "the graph executor runs dataflow graphs and cannot run `if`"
                        + (f" (at {node.span})" if node.span is not None else "")
                        + "; run this module with relay.create_executor('vm' or 'debug')"
                    )
                elif t is GlobalVar:
                    raise BuildError(
                        f"@{node.name_hint} is used as a value; the graph executor can only "
                        "call global functions"
                    )
                else:
                    raise BuildError(f"the graph executor cannot run a {t.__name__} node")
            elif stage == _APPLY:
                t = type(node)
                if t is Tuple:
                    memo[id(node)] = tuple(memo[id(f)] for f in node.fields)
                elif t is TupleGetItem:
                    value = memo[id(node.tuple_value)]
                    if not isinstance(value, tuple):
                        raise BuildError(f"projection .{node.index} of a non-tuple value")
                    memo[id(node)] = value[node.index]
                else:
                    args = [memo[id(a)] for a in node.args]
                    out = self.call(node, args, act)
                    if out is not None:
                        memo[id(node)] = out
                        continue
                    op = node.op
                    if type(op) is GlobalVar:
                        name = op.name_hint
                        if name in act.chain:
                            raise BuildError(
                                f"@{name} is recursive; the graph executor cannot run recursion "
                                "(use relay.create_executor('vm' or 'debug'))"
                            )
                        fn, env, chain = self.mod[name], None, (*act.chain, name)
                    else:
                        closure = memo[id(op)]
                        if not isinstance(closure, _Closure):
                            raise BuildError("a call of something that is not a function")
                        fn, env, chain = closure.func, closure.env, act.chain
                    if len(fn.params) != len(args):
                        raise BuildError(
                            f"a function of {len(fn.params)} parameters is called with "
                            f"{len(args)} arguments"
                        )
                    callee = _Activation(_Env(dict(zip(fn.params, args, strict=True)), env), chain)
                    stack.append((node, act, _RETURN, callee, fn.body))
                    stack.append((fn.body, callee, _ENTER))
            elif stage == _RETURN:
                callee, body = task[3], task[4]
                memo[id(node)] = callee.memo[id(body)]
            elif stage == _LET_BODY:
                act.env.vars[node.var] = memo[id(node.value)]
                stack.append((node, act, _COPY, node.body))
                stack.append((node.body, act, _ENTER))
            else:
                memo[id(node)] = memo[id(task[3])]
        return act.memo[id(root)]


def lower_to_plan(
    mod: IRModule, func_name: str = "main", inplace_ops: Any = None
) -> tuple[GraphPlan, dict[str, np.ndarray]]:
    """The memory-planned :class:`GraphPlan` of ``mod[func_name]`` and its parameters.

    ``mod`` must be type-checked. ``inplace_ops`` defaults to the elementwise and
    broadcast operators.
    """
    main = mod[func_name]
    low = _Lowerer(mod)
    env: dict[Var, Any] = {}
    for p in main.params:
        ty = checked_type_or_none(p) or p.type_annotation
        if not isinstance(ty, TensorType):
            raise BuildError(
                f"input %{p.name_hint} of @{func_name} has type {ty}; graph executor inputs "
                "must be tensors"
            )
        e = low.new_entries(ty, f"input %{p.name_hint}")
        low.nodes.append(PlanNode("input", p.name_hint, outputs=(e,)))
        env[p] = e
    names = [p.name_hint for p in main.params]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise BuildError(
            f"@{func_name} has several inputs named {', '.join(sorted(dup))}; the graph executor "
            "sets inputs by name, so give them distinct names"
        )
    value = low.run(main.body, _Activation(_Env(env, None), (func_name,)))
    heads = _flatten(value)
    if inplace_ops is None:
        inplace_ops = {n.name for n in low.nodes if n.kind == "op" and _elementwise(n.name)}
    entries, storage = plan_memory(low.entries, low.nodes, heads, inplace_ops)
    return GraphPlan(entries, low.nodes, storage, heads), low.params


def _elementwise(op_name: str) -> bool:
    """Elementwise or broadcast operators (TVM's ``TOpPattern`` <= BROADCAST)."""
    p = default_registry.get_attr(op_name, "TOpPattern")
    return isinstance(p, int) and p <= OpPattern.BROADCAST
