"""``relay.create_executor("graph", mod=mod)``: build with ``relay.build``, run on the graph
executor, return values as the interpreter does.

>>> import numpy as np
>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([x + x, x])))
>>> out = GraphRunner(mod).evaluate()(np.array([1, 2], "float32"))
>>> [o.numpy().tolist() for o in out]
[[2.0, 4.0], [1.0, 2.0]]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relaykit.errors import ExecutorUsageError, IRError
from relaykit.ir.expr import Expr, Function, GlobalVar, Var
from relaykit.ir.module import IRModule
from relaykit.ir.types import TupleType, Type
from relaykit.runtime.ndarray import NDArray
from relaykit.transform.bind import bind

from .build_module import GraphExecutorFactoryModule, build
from .graph_executor import GraphExecutor

__all__ = ["GraphRunner"]


def _structure(ty: Type | None, flat: list[NDArray]) -> Any:
    """Rebuild nested tuples of outputs from the flat list, following the return type."""
    it = iter(flat)

    def take(t: Type | None) -> Any:
        if isinstance(t, TupleType):
            return tuple(take(f) for f in t.fields)
        return next(it)

    return take(ty)


class GraphRunner:
    """An executor of kind ``"graph"``: ``evaluate()`` builds the function once."""

    def __init__(
        self,
        mod: IRModule | None = None,
        device: Any = None,
        target: Any = "llvm",
        params: Mapping[str, Any] | None = None,
    ) -> None:
        self.kind = "graph"
        self.mod = mod if mod is not None else IRModule()
        self.device = device
        self.target = target
        self.params = dict(params or {})

    def evaluate(self, expr: Expr | None = None, binds: Mapping[Var, Any] | None = None) -> Any:
        """A callable running ``expr`` (``main`` by default); a closed non-function
        expression is evaluated right away."""
        mod = self.mod.copy()
        if expr is None:
            func = mod["main"]
        elif isinstance(expr, GlobalVar):
            func = mod[expr.name_hint]
        elif isinstance(expr, Expr):
            func = expr if isinstance(expr, Function) else Function([], expr)
        else:
            raise IRError(f"evaluate needs a relay expression, got {type(expr).__name__}")
        if binds:
            func = bind(func, binds)  # type: ignore[assignment]
        mod["main"] = _distinct_input_names(func)
        factory = build(mod, target=self.target, params=self.params or None)
        if not isinstance(factory, GraphExecutorFactoryModule):  # an AOT build: no executor
            raise ExecutorUsageError("the graph executor needs a graph build, not ahead-of-time C")
        executor = factory.create(self.device)
        ret_type = mod["main"].checked_type.ret_type  # type: ignore[attr-defined]
        run = _Callable(executor, ret_type)
        if isinstance(expr, Expr) and not isinstance(expr, (Function, GlobalVar)):
            return run()
        return run


def _distinct_input_names(func: Function) -> Function:
    """``func`` with repeated parameter names made distinct (``x``, ``x_1``...): the
    callable passes inputs by position, as TVM's ``evaluate()`` does, so two
    parameters may share a name."""
    names = [p.name_hint for p in func.params]
    if len(set(names)) == len(names):
        return func
    taken = set(names)
    seen: set[str] = set()
    renamed: dict[Var, Var] = {}
    for p in func.params:
        name = p.name_hint
        if name in seen:
            k = 1
            while f"{name}_{k}" in taken:
                k += 1
            taken.add(f"{name}_{k}")
            renamed[p] = Var(f"{name}_{k}", p.type_annotation)
        seen.add(name)
    body = bind(func.body, renamed)
    params = [renamed.get(p, p) for p in func.params]
    return Function(params, body, func.ret_type, func.type_params, func.attrs)


class _Callable:
    def __init__(self, executor: GraphExecutor, ret_type: Type) -> None:
        self.executor = executor
        self.ret_type = ret_type
        self.names = executor.plan.input_names

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ex = self.executor
        if len(args) > len(self.names):
            raise ExecutorUsageError(
                f"the function takes {len(self.names)} inputs ({', '.join(self.names)}), got "
                f"{len(args)}"
            )
        given = dict(zip(self.names, args, strict=False))
        wanted = set(self.names)
        for k, v in kwargs.items():
            if k not in wanted:
                continue  # as TVM: a keyword naming no input is ignored (a bound parameter)
            if k in given:
                raise ExecutorUsageError(f"input {k!r} given twice (by position and by name)")
            given[k] = v
        missing = [n for n in self.names if n not in given]
        if missing:
            raise ExecutorUsageError(
                f"missing inputs: {', '.join(missing)}; the function takes {', '.join(self.names)}"
            )
        ex.set_input(**given)
        ex.run()
        flat = [ex.get_output(i) for i in range(ex.get_num_outputs())]
        return _structure(self.ret_type, flat)
