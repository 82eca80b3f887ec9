"""TVM's ``tvm.contrib.pipeline_executor``: run a built pipeline of modules.

A :class:`PipelineModule` holds one graph executor per module of a pipeline built by
:func:`relaykit.contrib.pipeline_executor_build.build`. ``set_input`` sets a pipeline
input (on the module it feeds), ``set_params`` a parameter group, and each ``run()``
runs the modules in dataflow order, each module's outputs set as the inputs of the
modules they feed, and queues the pipeline's outputs; ``get_output()`` takes the
oldest queued result (a list of ``NDArray``, empty when none is waiting). TVM runs the
modules on threads of their own; here ``run()`` runs them one after another, so a
result is queued when ``run()`` returns.

>>> import numpy as np
>>> import relaykit as tvm
>>> from relaykit import relay
>>> from relaykit.contrib import pipeline_executor_build as pb
>>> x = relay.var("x", shape=(2,))
>>> m1 = tvm.IRModule.from_expr(relay.Function([x], x + x))
>>> y = relay.var("y", shape=(2,))
>>> m2 = tvm.IRModule.from_expr(relay.Function([y], y * y))
>>> cfg = pb.PipelineConfig()
>>> cfg["input"]["a"].connect(cfg[m1]["input"]["x"])
>>> cfg[m1]["output"][0].connect(cfg[m2]["input"]["y"])
>>> cfg[m2]["output"][0].connect(cfg["output"]["0"])
>>> pipe = PipelineModule(pb.build(cfg))
>>> pipe.set_input("a", np.array([1.0, 3.0], "float32"))
>>> pipe.run()
>>> pipe.get_output()[0].numpy().tolist()
[4.0, 36.0]
"""

from __future__ import annotations

import collections
import os
from typing import Any

from relaykit.contrib.graph_executor import GraphModule
from relaykit.contrib.pipeline_executor_build import PipelineExecutorFactoryModule
from relaykit.errors import ExecutorUsageError
from relaykit.runtime.ndarray import NDArray

__all__ = ["PipelineModule", "pipeline_executor_enabled"]


def pipeline_executor_enabled() -> bool:
    """Whether pipelines can run: always."""
    return True


class PipelineModule:
    """A runnable pipeline (see the module docstring)."""

    def __init__(self, module: PipelineExecutorFactoryModule) -> None:
        if not isinstance(module, PipelineExecutorFactoryModule):
            raise ExecutorUsageError(
                f"PipelineModule takes what pipeline_executor_build.build returns, "
                f"got {type(module).__name__}"
            )
        self.factory = module
        self.stages = [GraphModule(s["lib"]["default"](s["dev"])) for s in module.stages]
        cfg = module.config
        self._inputs = {c["global_interface_name"]: c for c in cfg["input_connection"]}
        self._params = {c["global_param_name"]: c["mod_idx"] for c in cfg["param_connection"]}
        self._num_outputs = int(cfg["num_outputs"])
        self._results: collections.deque[list[NDArray]] = collections.deque()
        self._runs = 0

    @staticmethod
    def load_library(config_file_name: str | os.PathLike[str]) -> PipelineModule:
        """A pipeline from the configuration file ``export_library`` wrote."""
        return PipelineModule(PipelineExecutorFactoryModule.load_library(config_file_name))

    # -- interfaces ---------------------------------------------------------------------
    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    @property
    def num_outputs(self) -> int:
        return self._num_outputs

    @property
    def num_executing_pipeline(self) -> int:
        """How many times the pipeline has run."""
        return self._runs

    def _input(self, name: str) -> dict[str, Any]:
        conn = self._inputs.get(name)
        if conn is None:
            raise ExecutorUsageError(
                f"the pipeline has no input {name!r} (its inputs: {sorted(self._inputs)})"
            )
        return conn

    def get_input_pipeline_map(self, name: str) -> tuple[str, str]:
        """``(module index as a string, the module's input name)`` that input ``name`` feeds."""
        conn = self._input(name)
        return str(conn["mod_idx"]), str(conn["module_interface_name"])

    def get_params_group_pipeline_map(self, name: str) -> int:
        """The index of the module parameter group ``name`` sets."""
        if name not in self._params:
            raise ExecutorUsageError(
                f"the pipeline has no parameter group {name!r} (its groups: {sorted(self._params)})"
            )
        return int(self._params[name])

    # -- running ------------------------------------------------------------------------
    def set_input(self, key: str, value: Any) -> None:
        """Set pipeline input ``key`` (on the module input it is connected to)."""
        conn = self._input(key)
        self.stages[conn["mod_idx"]].set_input(conn["module_interface_name"], value)

    def get_input(self, key: str) -> NDArray:
        """The value of pipeline input ``key`` as set on its module."""
        conn = self._input(key)
        return self.stages[conn["mod_idx"]].get_input(conn["module_interface_name"])

    def set_params(self, params_group_name: str, params_data: Any) -> None:
        """Set the parameters ``params_data`` (a dict of name to array) of the module that
        parameter group ``params_group_name`` is connected to."""
        idx = self.get_params_group_pipeline_map(params_group_name)
        if not isinstance(params_data, dict):
            raise ExecutorUsageError(
                f"set_params takes a dict of parameter name to array for group "
                f"{params_group_name!r}, got {type(params_data).__name__}"
            )
        self.stages[idx].set_input(**params_data)

    def run(self) -> None:
        """Run every module in order and queue the pipeline's outputs."""
        outputs: dict[int, NDArray] = {}
        for stage, spec in zip(self.stages, self.factory.stages, strict=True):
            stage.run()
            for out in spec["outputs"]:
                value = stage.get_output(int(out["output_idx"]))
                for dep in out["dependencies"]:
                    if "global_output_index" in dep:
                        outputs[int(dep["global_output_index"])] = NDArray(value.numpy().copy())
                    else:
                        self.stages[int(dep["mod_idx"])].set_input(dep["input_name"], value)
        self._results.append([outputs[i] for i in sorted(outputs)])
        self._runs += 1

    def get_output(self) -> list[NDArray]:
        """The outputs of the oldest run not yet taken, or ``[]`` when none is waiting."""
        return self._results.popleft() if self._results else []
