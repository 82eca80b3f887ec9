"""TVM's ``tvm.contrib.graph_executor``: ``GraphModule`` and ``create``.

>>> import numpy as np
>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], x * x)), target="llvm")
>>> m = GraphModule(lib["default"](tvm.cpu(0)))
>>> m.run(x=np.array([3, 4], "float32"))
>>> m.get_output(0).numpy().tolist(), m.get_num_outputs()
([9.0, 16.0], 1)
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import ExecutionError
from relaykit.execution.graph_executor import GraphExecutor
from relaykit.execution.graph_plan import GraphPlan
from relaykit.runtime.module import BenchmarkResult, Module, time_calls
from relaykit.runtime.ndarray import Device, NDArray

__all__ = ["GraphModule", "create", "BenchmarkResult"]


class GraphModule:
    """A wrapper over a graph executor module, with TVM's methods.

    Like the executor it wraps, it may be shared by threads: each thread sets its own
    inputs, runs and reads its own outputs (see :mod:`relaykit.execution.graph_executor`).
    """

    def __init__(self, module: Module) -> None:
        if not isinstance(module, Module):
            raise ExecutionError(
                f"GraphModule wraps the module lib['default'](dev) returns, got {module!r}"
            )
        self.module = module
        self._set_input = module["set_input"]
        self._run = module["run"]
        self._get_output = module["get_output"]
        self._get_input = module["get_input"]
        self._get_num_outputs = module["get_num_outputs"]
        self._get_num_inputs = module["get_num_inputs"]
        self._get_input_index = module["get_input_index"]
        self._load_params = module["load_params"]

    def set_input(self, key: Any = None, value: Any = None, **params: Any) -> None:
        """Set an input by name or index, or several by keyword."""
        self._set_input(key, value, **params)

    def run(self, **input_dict: Any) -> None:
        """Run the graph, after setting ``input_dict``."""
        self._run(**input_dict)

    def get_num_outputs(self) -> int:
        return int(self._get_num_outputs())

    def get_num_inputs(self) -> int:
        return int(self._get_num_inputs())

    def get_input(self, index: int | str, out: Any = None) -> NDArray:
        return self._get_input(index, out)

    def get_input_index(self, name: str) -> int:
        return int(self._get_input_index(name))

    def get_output(self, index: int, out: Any = None) -> NDArray:
        return self._get_output(index, out)

    def load_params(self, params: Any) -> None:
        self._load_params(params)

    def __getitem__(self, key: str) -> Any:
        return self.module[key]

    def benchmark(
        self,
        device: Any = None,
        func_name: str = "run",
        repeat: int = 5,
        number: int = 5,
        min_repeat_ms: float = 0.0,
        end_to_end: bool = False,
        **kwargs: Any,
    ) -> BenchmarkResult:
        """Time ``run`` (``repeat`` measurements of ``number`` runs each), as TVM does."""
        if kwargs:
            self.set_input(**kwargs)
        return time_calls(self._run, number, repeat, min_repeat_ms)


def create(graph_json_str: str, libmod: Module, device: Device | Any = None) -> GraphModule:
    """A graph module from a graph (plan) JSON and its library; set the parameters with
    ``set_input(**params)`` or ``load_params(params)``, as in TVM (``run()`` refuses to
    run before they are set)."""
    if isinstance(device, (list, tuple)):
        device = device[0] if device else None
    plan = GraphPlan.from_json(graph_json_str)
    return GraphModule(GraphExecutor(plan, libmod, None, device))
