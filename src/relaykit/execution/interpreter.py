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

from relaykit.dtypes import converts_exactly
from relaykit.errors import ExecutionError, IRError, RelayKitError
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Var,
    checked_type_or_none,
)
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.symbolic import PrimExpr, vars_of
from relaykit.ir.symbolic import Var as TirVar
from relaykit.ir.symbolic import evaluate as evaluate_dim
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.runtime.container import ConstructorValue, RefValue
from relaykit.runtime.ndarray import NDArray
from relaykit.runtime.vm import ADT
from relaykit.transform.bind import bind, bind_params_by_name
from relaykit.transform.infer_type import infer_module
from relaykit.transform.remove_unused_functions import remove_unused_functions

from .evaluator import Activation, Closure, Environment, Evaluator, describe_call
from .graph_runner import GraphRunner
from .vm import VMExecutor

__all__ = [
    "Closure",
    "Executor",
    "Interpreter",
    "create_executor",
    "evaluate",
    "shape_mismatch",
    "to_runtime_value",
]


class Interpreter(Evaluator):
    """The reference semantics: values are NumPy arrays, tuples of them and closures;
    an operator runs its reference kernel (``FCompute``), whose result is checked
    against the type inference gave the call."""

    #: The values symbolic dimensions (``te.var``) took in the current call: bound by the
    #: inputs' shapes, then checked against every operator's output.
    dim_env: dict[TirVar, int]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dim_env = {}

    def eval_constant(self, node: Constant) -> Any:
        return node.data.numpy()

    def choose_branch(self, node: If, cond: Any) -> bool:
        return bool(np.asarray(cond))

    def apply_op(self, call: Call, op: Op, args: list[Any]) -> Any:
        kernel = op.get_attr("FCompute")
        if kernel is None:
            raise ExecutionError(
                f"while evaluating {describe_call(call)}: operator {op.name} has no reference "
                "kernel"
            )
        try:
            out = kernel(args, call.attrs)
        except RelayKitError:
            raise
        except Exception as err:
            raise ExecutionError(
                f"while evaluating {describe_call(call)}: {type(err).__name__}: {err}"
            ) from err
        expected = checked_type_or_none(call)
        if expected is not None:
            _check_value(out, expected, call, self.dim_env)
        return out


_DTYPE_NAMES: dict[np.dtype[Any], str] = {}


def _dtype_name(dtype: np.dtype[Any]) -> str:
    """``dtype.name``, which NumPy computes in Python on every read (microseconds): cached."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = dtype.name
        if len(_DTYPE_NAMES) < 256:
            _DTYPE_NAMES[dtype] = name
    return name


def shape_mismatch(shape: tuple[int, ...], dims: tuple[Any, ...], env: dict[TirVar, int]) -> bool:
    """Whether a run-time ``shape`` fails to match a type's ``dims``: ``?`` matches any
    size, a size variable binds on first use (in ``env``) and must agree afterwards, an
    expression of bound variables must equal its value; ints must be equal."""
    if len(shape) != len(dims):
        return True
    for got, want in zip(shape, dims, strict=True):
        if type(want) is int:
            if got != want:
                return True
        elif isinstance(want, TirVar):
            if env.setdefault(want, got) != got:
                return True
        elif (
            isinstance(want, PrimExpr)
            and not isinstance(want, AnyDim)
            and all(v in env for v in vars_of(want))
            and evaluate_dim(want, env) != got
        ):
            return True
    return False


def _check_value(value: Any, ty: Type, call: Call, env: dict[TirVar, int] | None = None) -> None:
    """The kernel's output must have the type inference predicted (``?`` and symbolic
    dims are wildcards; a size variable keeps one value per call)."""
    if isinstance(ty, TensorType):
        if not isinstance(value, np.ndarray):
            value = np.asarray(value)
        bad_shape = (
            value.shape != ty.shape
            if ty.is_static
            else shape_mismatch(value.shape, ty.shape, {} if env is None else env)
        )
        if bad_shape or _dtype_name(value.dtype) != ty.dtype:
            raise ExecutionError(
                f"while evaluating {describe_call(call)}: operator {call.op} returned "
                f"{value.dtype.name}{list(value.shape)} (shape {value.shape}) but its type is "
                f"{ty} (shape {_shape_text(ty)})"
            )
    elif isinstance(ty, TupleType):
        if not isinstance(value, tuple) or len(value) != len(ty.fields):
            raise ExecutionError(
                f"while evaluating {describe_call(call)}: kernel returned {type(value).__name__}, "
                f"expected a tuple of {len(ty.fields)}"
            )
        for v, t in zip(value, ty.fields, strict=False):
            _check_value(v, t, call, env)


def _shape_text(ty: TensorType) -> str:
    return "(" + ", ".join(str(d) for d in ty.shape) + ("," if len(ty.shape) == 1 else "") + ")"


def to_runtime_value(value: Any) -> Any:
    """Interpreter values as users see them: NDArrays, tuples of them (as :class:`ADT`
    objects with tag 0, which are tuples), constructor values, closures."""
    if isinstance(value, np.ndarray):
        return NDArray(value)
    if isinstance(value, np.generic):
        return NDArray(np.asarray(value))
    if isinstance(value, ConstructorValue):
        fields = [to_runtime_value(v) for v in value]
        return ConstructorValue(value.tag, fields, value.constructor)
    if isinstance(value, ADT):
        return ADT(value.tag, [to_runtime_value(v) for v in value])
    if isinstance(value, tuple):
        return ADT(0, [to_runtime_value(v) for v in value])
    if isinstance(value, RefValue):
        return RefValue(to_runtime_value(value.value))
    return value


def from_runtime_value(value: Any) -> Any:
    """A user's value (NDArrays, constructor values, references) as the machine holds it."""
    if isinstance(value, NDArray):
        return value.numpy()
    if isinstance(value, ConstructorValue):
        fields = [from_runtime_value(v) for v in value.fields]
        return ConstructorValue(value.tag, fields, value.constructor)
    if isinstance(value, RefValue):
        return RefValue(from_runtime_value(value.value))
    if isinstance(value, ADT) and value.tag != 0:
        return ADT(value.tag, [from_runtime_value(v) for v in value])
    if isinstance(value, (tuple, list)):
        return tuple(from_runtime_value(v) for v in value)
    return value


def _convert_input(
    value: Any, ty: Type | None, name: str, env: dict[TirVar, int] | None = None
) -> Any:
    if isinstance(value, NDArray):
        value = value.numpy()
    elif isinstance(value, Constant):  # a Relay constant as an argument (as TVM takes it)
        value = value.data.numpy()
    if isinstance(value, ADT) and not isinstance(value, ConstructorValue) and value.tag == 0:
        value = tuple(value)  # a runtime tuple
    if type(value) is tuple and not isinstance(ty, TupleType):  # a tuple for a type var
        return tuple(_convert_input(v, None, f"{name}.{i}", env) for i, v in enumerate(value))
    if isinstance(ty, TupleType):
        if not isinstance(value, (tuple, list)) or len(value) != len(ty.fields):
            raise ExecutionError(f"input %{name} expects a tuple of type {ty}, got {value!r}")
        return tuple(
            _convert_input(v, t, f"{name}.{i}", env)
            for i, (v, t) in enumerate(zip(value, ty.fields, strict=False))
        )
    if isinstance(value, (Closure, ConstructorValue, RefValue)):
        return from_runtime_value(value)
    arr = np.asarray(value)
    if isinstance(ty, TensorType):
        bad = (
            arr.shape != ty.shape
            if ty.is_static
            else shape_mismatch(arr.shape, ty.shape, {} if env is None else env)
        )
        if bad:
            bound = ", ".join(f"{k}={v}" for k, v in (env or {}).items())
            raise ExecutionError(
                f"input %{name} expects {ty}, got an array of shape {arr.shape} ({arr.dtype})"
                + (f"; size variables bound by earlier inputs: {bound}" if bound else "")
            )
        if arr.dtype.name != ty.dtype:
            loose = not isinstance(value, np.ndarray) and np.dtype(ty.dtype).kind not in "iu"
            if loose or converts_exactly(arr, ty.dtype):  # a list's fractions are no ints
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
            expr = bind(expr, binds)
        main_name = "__evaluate_target__"
        func = expr if isinstance(expr, Function) else Function([], expr)
        mod[main_name] = func
        # Only what the evaluated function reaches is checked (a Prelude brings hundreds
        # of globals the program may never call).
        mod = remove_unused_functions(mod, [main_name])
        infer_module(mod)
        machine = Interpreter(mod)
        if isinstance(expr, Function):
            return _CallableFunction(machine, func)
        value = machine.run(expr, Activation(Environment()))
        return to_runtime_value(value)


class _CallableFunction:
    """A Relay function callable from Python: positional inputs, keyword parameters."""

    def __init__(self, machine: Interpreter, func: Function) -> None:
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
        # as TVM: each parameter takes the keyword of its name (parameters sharing a name
        # share the value)
        by_name: dict[str, list[Var]] = {}
        for p in params[len(args) :]:
            by_name.setdefault(p.name_hint, []).append(p)
        ignored = []
        for k, v in kwargs.items():
            named = by_name.get(k)
            if named is None:
                if k in self.param_names:
                    raise ExecutionError(f"input {k!r} given twice (by position and by name)")
                ignored.append(k)  # as TVM: a keyword naming no input is ignored
                continue
            for param in named:
                values[param] = v
        missing = [p.name_hint for p in params if p not in values]
        if missing:
            note = "".join(f"; unknown input {k!r} was ignored" for k in ignored)
            known = ", ".join(self.param_names)
            raise ExecutionError(
                f"missing inputs: {', '.join(missing)}{note} (the function's inputs are: {known})"
            )
        dims: dict[TirVar, int] = {}
        self.machine.dim_env = dims
        env = {
            p: _convert_input(values[p], checked_type_or_none(p), p.name_hint, dims) for p in params
        }
        act = Activation(Environment(env))
        return to_runtime_value(self.machine.run(self.func.body, act))


def create_executor(
    kind: str = "debug",
    mod: IRModule | None = None,
    device: Any = None,
    target: Any = "llvm",
    params: Mapping[str, Any] | None = None,
) -> Executor | GraphRunner | VMExecutor:
    """TVM's ``relay.create_executor``. ``"debug"`` is the reference interpreter;
    ``"graph"`` builds with ``relay.build`` and runs the graph executor; ``"vm"`` compiles
    for the Relay VM (:mod:`relaykit.execution.vm`); ``"aot"`` is accepted and runs on the
    interpreter."""
    if kind not in ("debug", "graph", "vm", "aot"):
        raise IRError(f"unknown executor kind {kind!r}; use 'debug', 'graph' or 'vm'")
    if mod is not None and not isinstance(mod, IRModule):
        raise IRError(f"create_executor's mod must be an IRModule, got {type(mod).__name__}")
    if kind == "graph":
        return GraphRunner(mod, device, target, params)
    if params:
        mod = mod.copy() if mod is not None else IRModule()
        mod["main"] = bind_params_by_name(mod["main"], params)
    if kind == "vm":
        return VMExecutor(mod if mod is not None else IRModule(), device, target)
    return Executor(kind, mod, device, target)


def evaluate(func: Function | Expr, *args: Any, mod: IRModule | None = None, **kwargs: Any) -> Any:
    """Evaluate ``func`` on inputs with the reference interpreter."""
    f = Executor("debug", mod).evaluate(func)
    return f(*args, **kwargs) if callable(f) and isinstance(func, Function) else f
