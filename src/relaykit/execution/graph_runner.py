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
    """Rebuild nested outputs from the flat list, following the return type: a tuple
    type gives a list (as TVM's graph executor returns them)."""
    it = iter(flat)

    def take(t: Type | None) -> Any:
        if isinstance(t, TupleType):
            return [take(f) for f in t.fields]
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
        mod["main"] = func
        factory = build(mod, target=self.target, params=self.params or None)
        if not isinstance(factory, GraphExecutorFactoryModule):  # an AOT build: no executor
            raise ExecutorUsageError("the graph executor needs a graph build, not ahead-of-time C")
        executor = factory.create(self.device)
        ret_type = mod["main"].checked_type.ret_type  # type: ignore[attr-defined]
        run = _Callable(executor, ret_type)
        if isinstance(expr, Expr) and not isinstance(expr, (Function, GlobalVar)):
            return run()
        return run


class _Callable:
    def __init__(self, executor: GraphExecutor, ret_type: Type) -> None:
        self.executor = executor
        self.ret_type = ret_type
        self.names = executor.plan.input_names

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Inputs by position (as TVM's ``evaluate()`` passes them, so two parameters may
        share a name) or by name (a name stands for the first input of that name)."""
        ex = self.executor
        if len(args) > len(self.names):
            raise ExecutorUsageError(
                f"the function takes {len(self.names)} inputs ({', '.join(self.names)}), got "
                f"{len(args)}"
            )
        given = dict(enumerate(args))
        for k, v in kwargs.items():
            if k not in self.names:
                continue  # as TVM: a keyword naming no input is ignored (a bound parameter)
            i = self.names.index(k)
            if i in given:
                raise ExecutorUsageError(f"input {k!r} given twice (by position and by name)")
            given[i] = v
        missing = [n for i, n in enumerate(self.names) if i not in given]
        if missing:
            raise ExecutorUsageError(
                f"missing inputs: {', '.join(missing)}; the function takes {', '.join(self.names)}"
            )
        for i, v in sorted(given.items()):
            ex.set_input(i, v)
        ex.run()
        flat = [ex.get_output(i) for i in range(ex.get_num_outputs())]
        return _structure(self.ret_type, flat)
