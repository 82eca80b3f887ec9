"""The reference interpreter (``relay.create_executor("debug")``).

It evaluates every IR construct — operator calls through each op's reference
NumPy kernel, closures, ``Let``, ``If``, tuples, recursion through globals —
with an explicit work stack, so neither deep graphs nor deep recursion in the
program touch Python's recursion limit. Shared sub-expressions are evaluated
once per function activation.

>>> import numpy as np
>>> from relaykit.ir import Var, Function, IRModule, TensorType
>>> from relaykit.op import add
>>> x = Var("x", TensorType((2,)))
>>> f = Executor("debug", IRModule()).evaluate(Function([x], add(x, x)))
>>> f(np.array([1, 2], "float32")).numpy().tolist()
[2.0, 4.0]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from relaykit.errors import ExecutionError, IRError, RelayKitError
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
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.runtime.ndarray import NDArray
from relaykit.transform.infer_type import infer_module

__all__ = ["Closure", "Executor", "create_executor", "evaluate", "to_runtime_value"]


class _Env:
    """A lexical environment: this scope's bindings and the enclosing one."""

    __slots__ = ("vars", "parent")

    #: What an unbound variable raises (the graph lowering raises BuildError).
    unbound_error: type[Exception] = ExecutionError

    def __init__(self, bindings: dict[Var, Any], parent: _Env | None) -> None:
        self.vars = bindings
        self.parent = parent

    def lookup(self, var: Var) -> Any:
        env: _Env | None = self
        while env is not None:
            v = env.vars.get(var, _MISSING)
            if v is not _MISSING:
                return v
            env = env.parent
        raise self.unbound_error(f"variable %{var.name_hint} is not bound (ill-formed program)")


_MISSING = object()


class Closure:
    """A function value: a ``Function`` and the environment it was created in."""

    __slots__ = ("func", "env", "name")

    def __init__(self, func: Function, env: _Env | None, name: str = "") -> None:
        self.func = func
        self.env = env
        self.name = name

    def __repr__(self) -> str:
        return f"<closure {self.name or 'fn'} of {len(self.func.params)} params>"


class _Activation:
    """One evaluation of a function body: its environment and memo table."""

    __slots__ = ("env", "memo")

    def __init__(self, env: _Env) -> None:
        self.env = env
        self.memo: dict[int, Any] = {}


# Stages of a task on the work stack.
_ENTER, _APPLY, _RETURN, _LET_BODY, _IF_BRANCH, _COPY = range(6)


def _describe(node: Expr) -> str:
    if isinstance(node, Call):
        if isinstance(node.op, Op):
            callee = node.op.name
        elif isinstance(node.op, GlobalVar):
            callee = "@" + node.op.name_hint
        else:
            callee = "a closure"
        shapes = []
        for a in node.args:
            t = checked_type_or_none(a)
            shapes.append(str(t) if t is not None else type(a).__name__)
        attrs = ", ".join(f"{k}={v!r}" for k, v in node.attrs.items())
        where = f" at {node.span}" if node.span is not None else ""
        return f"{callee}({', '.join(shapes)}{', ' + attrs if attrs else ''}){where}"
    return type(node).__name__


class _Machine:
    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.globals: dict[str, Closure] = {}

    def global_closure(self, gv: GlobalVar) -> Closure:
        c = self.globals.get(gv.name_hint)
        if c is None:
            c = Closure(self.mod[gv.name_hint], None, gv.name_hint)
            self.globals[gv.name_hint] = c
        return c

    def run(self, root: Expr, act: _Activation) -> Any:
        stack: list[tuple[Any, ...]] = [(root, act, _ENTER)]
        while stack:
            task = stack.pop()
            node, act, stage = task[0], task[1], task[2]
            memo = act.memo
            if stage == _ENTER:
                key = id(node)
                if key in memo:
                    continue
                t = type(node)
                if t is Var:
                    memo[key] = act.env.lookup(node)
                elif t is Constant:
                    memo[key] = node.data.numpy()
                elif t is GlobalVar:
                    memo[key] = self.global_closure(node)
                elif t is Op:
                    memo[key] = node
                elif t is Function:
                    memo[key] = Closure(node, act.env)
                elif t is Call or t is Tuple:
                    stack.append((node, act, _APPLY))
                    kids = node.args if t is Call else node.fields
                    for k in reversed(kids):
                        if id(k) not in memo:
                            stack.append((k, act, _ENTER))
                    if t is Call and id(node.op) not in memo:
                        stack.append((node.op, act, _ENTER))
                elif t is TupleGetItem:
                    stack.append((node, act, _APPLY))
                    stack.append((node.tuple_value, act, _ENTER))
                elif t is Let:
                    stack.append((node, act, _LET_BODY))
                    stack.append((node.value, act, _ENTER))
                elif t is If:
                    stack.append((node, act, _IF_BRANCH))
                    stack.append((node.cond, act, _ENTER))
                else:
                    raise ExecutionError(f"cannot evaluate a {t.__name__} node")
            elif stage == _APPLY:
                t = type(node)
                if t is Tuple:
                    memo[id(node)] = tuple(memo[id(f)] for f in node.fields)
                elif t is TupleGetItem:
                    memo[id(node)] = memo[id(node.tuple_value)][node.index]
                else:
                    callee = memo[id(node.op)]
                    args = [memo[id(a)] for a in node.args]
                    if type(callee) is Op:
                        memo[id(node)] = self.apply_op(node, callee, args)
                    elif type(callee) is Closure:
                        fn = callee.func
                        if len(fn.params) != len(args):
                            raise ExecutionError(
                                f"while evaluating {_describe(node)}: function takes "
                                f"{len(fn.params)} arguments, got {len(args)}"
                            )
                        callee_act = _Activation(
                            _Env(dict(zip(fn.params, args, strict=False)), callee.env)
                        )
                        stack.append((node, act, _RETURN, callee_act, fn.body))
                        stack.append((fn.body, callee_act, _ENTER))
                    else:
                        raise ExecutionError(
                            f"while evaluating {_describe(node)}: cannot call a "
                            f"{type(callee).__name__} value"
                        )
            elif stage == _RETURN:
                callee_act, body = task[3], task[4]
                memo[id(node)] = callee_act.memo[id(body)]
            elif stage == _LET_BODY:
                act.env.vars[node.var] = memo[id(node.value)]
                stack.append((node, act, _COPY, node.body))
                stack.append((node.body, act, _ENTER))
            elif stage == _IF_BRANCH:
                cond = memo[id(node.cond)]
                branch = node.true_branch if bool(np.asarray(cond)) else node.false_branch
                stack.append((node, act, _COPY, branch))
                stack.append((branch, act, _ENTER))
            else:  # _COPY: a Let or If takes the value of its body/branch
                memo[id(node)] = memo[id(task[3])]
        return act.memo[id(root)]

    @staticmethod
    def apply_op(call: Call, op: Op, args: list[Any]) -> Any:
        kernel = op.get_attr("FCompute")
        if kernel is None:
            raise ExecutionError(
                f"while evaluating {_describe(call)}: operator {op.name} has no reference kernel"
            )
        try:
            out = kernel(args, call.attrs)
        except RelayKitError:
            raise
        except Exception as err:
            raise ExecutionError(
                f"while evaluating {_describe(call)}: {type(err).__name__}: {err}"
            ) from err
        expected = checked_type_or_none(call)
        if expected is not None:
            _check_value(out, expected, call)
        return out


def _check_value(value: Any, ty: Type, call: Call) -> None:
    """The kernel's output must have the type inference predicted."""
    if isinstance(ty, TensorType):
        if not isinstance(value, np.ndarray):
            value = np.asarray(value)
        if value.shape != ty.shape or value.dtype.name != ty.dtype:
            raise ExecutionError(
                f"while evaluating {_describe(call)}: kernel returned {value.dtype.name}"
                f"{list(value.shape)} but the type is {ty}"
            )
    elif isinstance(ty, TupleType):
        if not isinstance(value, tuple) or len(value) != len(ty.fields):
            raise ExecutionError(
                f"while evaluating {_describe(call)}: kernel returned {type(value).__name__}, "
                f"expected a tuple of {len(ty.fields)}"
            )
        for v, t in zip(value, ty.fields, strict=False):
            _check_value(v, t, call)


def to_runtime_value(value: Any) -> Any:
    """Interpreter values as users see them: NDArrays, tuples of them, closures."""
    if isinstance(value, np.ndarray):
        return NDArray(value)
    if isinstance(value, np.generic):
        return NDArray(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(to_runtime_value(v) for v in value)
    return value


def _convert_input(value: Any, ty: Type | None, name: str) -> Any:
    if isinstance(value, NDArray):
        value = value.numpy()
    if isinstance(ty, TupleType):
        if not isinstance(value, (tuple, list)) or len(value) != len(ty.fields):
            raise ExecutionError(f"input %{name} expects a tuple of type {ty}, got {value!r}")
        return tuple(
            _convert_input(v, t, f"{name}.{i}")
            for i, (v, t) in enumerate(zip(value, ty.fields, strict=False))
        )
    if isinstance(value, Closure):
        return value
    arr = np.asarray(value)
    if isinstance(ty, TensorType):
        if arr.shape != ty.shape:
            raise ExecutionError(
                f"input %{name} expects {ty}, got an array of shape {arr.shape} ({arr.dtype})"
            )
        if arr.dtype.name != ty.dtype:
            if not isinstance(value, np.ndarray) or np.can_cast(arr.dtype, ty.dtype, "same_kind"):
                arr = arr.astype(ty.dtype)
            else:
                raise ExecutionError(
                    f"input %{name} expects {ty}, got an array of dtype {arr.dtype}"
                )
    return arr


class Executor:
    """Evaluates Relay functions of a module (``create_executor(kind, mod)``)."""

    def __init__(
        self,
        kind: str = "debug",
        mod: IRModule | None = None,
        device: Any = None,
        target: Any = "llvm",
    ) -> None:
        self.kind = kind
        self.mod = mod if mod is not None else IRModule()
        self.device = device
        self.target = target

    def evaluate(self, expr: Expr | None = None, binds: Mapping[Var, Any] | None = None) -> Any:
        """A callable for a function (``main`` when ``expr`` is None), or the value of
        a closed expression."""
        mod = self.mod.copy()
        if expr is None:
            expr = mod["main"]
        elif isinstance(expr, GlobalVar):
            expr = mod[expr.name_hint]
        if not isinstance(expr, Expr):
            raise IRError(f"evaluate needs a relay expression, got {type(expr).__name__}")
        if binds:
            from relaykit.transform.bind import bind

            expr = bind(expr, binds)
        main_name = "__evaluate_target__"
        func = expr if isinstance(expr, Function) else Function([], expr)
        mod[main_name] = func
        infer_module(mod)
        machine = _Machine(mod)
        if isinstance(expr, Function):
            return _CallableFunction(machine, func)
        value = machine.run(expr, _Activation(_Env({}, None)))
        return to_runtime_value(value)


class _CallableFunction:
    """A Relay function callable from Python: positional inputs, keyword parameters."""

    def __init__(self, machine: _Machine, func: Function) -> None:
        self.machine = machine
        self.func = func
        self.param_names = [p.name_hint for p in func.params]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        params = self.func.params
        if len(args) > len(params):
            raise ExecutionError(f"function takes {len(params)} inputs, got {len(args)}")
        values: dict[Var, Any] = {}
        for p, a in zip(params, args, strict=False):
            values[p] = a
        by_name = {p.name_hint: p for p in params[len(args) :]}
        for k, v in kwargs.items():
            p = by_name.get(k)
            if p is None:
                known = ", ".join(self.param_names)
                raise ExecutionError(f"unknown input {k!r}; the function's inputs are: {known}")
            values[p] = v
        missing = [p.name_hint for p in params if p not in values]
        if missing:
            raise ExecutionError(f"missing inputs: {', '.join(missing)}")
        env = {p: _convert_input(values[p], checked_type_or_none(p), p.name_hint) for p in params}
        act = _Activation(_Env(env, None))
        return to_runtime_value(self.machine.run(self.func.body, act))


def create_executor(
    kind: str = "debug",
    mod: IRModule | None = None,
    device: Any = None,
    target: Any = "llvm",
    params: Mapping[str, Any] | None = None,
) -> Executor:
    """TVM's ``relay.create_executor``. ``"debug"`` is the reference interpreter;
    ``"graph"`` builds with ``relay.build`` and runs the graph executor; ``"vm"`` and
    ``"aot"`` are accepted and run on the interpreter (it handles control flow)."""
    if kind not in ("debug", "graph", "vm", "aot"):
        raise IRError(f"unknown executor kind {kind!r}; use 'debug', 'graph' or 'vm'")
    if mod is not None and not isinstance(mod, IRModule):
        raise IRError(f"create_executor's mod must be an IRModule, got {type(mod).__name__}")
    if kind == "graph":
        from .graph_runner import GraphRunner

        return GraphRunner(mod, device, target, params)  # type: ignore[return-value]
    if params:
        from relaykit.transform.bind import bind_params_by_name

        mod = mod.copy() if mod is not None else IRModule()
        mod["main"] = bind_params_by_name(mod["main"], params)
    return Executor(kind, mod, device, target)


def evaluate(func: Function | Expr, *args: Any, mod: IRModule | None = None, **kwargs: Any) -> Any:
    """Evaluate ``func`` on inputs with the reference interpreter."""
    f = Executor("debug", mod).evaluate(func)
    return f(*args, **kwargs) if callable(f) and isinstance(func, Function) else f
