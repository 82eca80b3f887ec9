"""``tvm.driver.tvmc.model``: a loaded model, a compiled package, a run's result.

>>> from relaykit import relay
>>> mod, params = relay.testing.mlp.get_workload(batch_size=1)
>>> TVMCModel(mod, params).mod is mod
True
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError
from relaykit.ir.module import IRModule
from relaykit.runtime.artifact import load_module
from relaykit.runtime.ndarray import NDArray
from relaykit.text.parser import parse

__all__ = ["TVMCModel", "TVMCPackage", "TVMCResult", "TVMCException"]


class TVMCException(ArgumentError):
    """TVM's tvmc error: a model, package or option it cannot use."""


class TVMCModel:
    """A model as Relay: ``mod`` and its ``params`` (from ``tvmc.load``)."""

    def __init__(
        self,
        mod: IRModule | None = None,
        params: Mapping[str, Any] | None = None,
        model_path: str | None = None,
    ) -> None:
        if model_path is not None:
            mod, params = self.load(model_path)
        if not isinstance(mod, IRModule):
            raise TVMCException("TVMCModel needs an IRModule (or model_path= of a saved model)")
        self.mod = mod
        self.params = dict(params or {})
        self._tmp = tempfile.mkdtemp(prefix="tvmc-")

    def save(self, model_path: str) -> None:
        """Write the module as Relay text and the parameters as an ``.npz`` beside it."""
        with open(model_path, "w") as f:
            f.write(self.mod.astext(show_meta_data=True))
        arrays = {
            k: (v.numpy() if isinstance(v, NDArray) else np.asarray(v))
            for k, v in self.params.items()
        }
        np.savez(model_path + ".params.npz", **arrays)  # type: ignore[arg-type]

    @staticmethod
    def load(model_path: str) -> tuple[IRModule, dict[str, Any]]:
        """Read what :meth:`save` wrote."""
        with open(model_path) as f:
            mod = parse(f.read())
        params_path = model_path + ".params.npz"
        params = dict(np.load(params_path)) if os.path.exists(params_path) else {}
        return mod, params

    def default_package_path(self) -> str:
        return os.path.join(self._tmp, "model_package.rkmod")

    def summary(self) -> str:
        """The module as Relay text."""
        return str(self.mod)

    def __repr__(self) -> str:
        return f"TVMCModel({len(self.params)} params)\n{self.mod}"


class TVMCPackage:
    """A compiled model on disk (``tvmc.compile``'s ``package_path``), ready to run."""

    def __init__(self, package_path: str, project_dir: str | None = None) -> None:
        if not os.path.isfile(package_path):
            raise TVMCException(
                f"no compiled package at {package_path!r}; make one with tvmc.compile"
            )
        self.package_path = package_path
        self.factory = load_module(package_path)
        plan = getattr(self.factory, "plan", None)
        if plan is None:
            raise TVMCException(f"{package_path!r} is not a compiled model package (tvmc.compile)")
        self.inputs = {n.name: plan.entries[n.outputs[0]] for n in plan.nodes if n.kind == "input"}
        self.type = "graph"

    def __repr__(self) -> str:
        return f"TVMCPackage({self.package_path!r})"


class TVMCResult:
    """A run's outputs (``output_0``, ...) and, when timed, its times in seconds."""

    def __init__(self, outputs: Mapping[str, np.ndarray], times: list[float] | None) -> None:
        self.outputs = dict(outputs)
        self.times = times

    def format_times(self) -> str:
        if not self.times:
            return "No time measurements (run with benchmark=True)"
        t = np.asarray(self.times) * 1e3
        head = ["mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)"]
        vals = [t.mean(), np.median(t), t.max(), t.min(), t.std()]
        return (
            "Execution time summary:\n"
            + "".join(f"{h:>13}" for h in head)
            + "\n"
            + "".join(f"{v:13.4f}" for v in vals)
        )

    def get_output(self, name: str) -> np.ndarray:
        if name not in self.outputs:
            raise TVMCException(f"no output {name!r}; the outputs are {list(self.outputs)}")
        return self.outputs[name]

    def save(self, output_path: str) -> None:
        """The outputs as an ``.npz`` file."""
        np.savez(output_path, **self.outputs)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return f"{self.format_times()}\nOutput Names:\n {list(self.outputs)}"
