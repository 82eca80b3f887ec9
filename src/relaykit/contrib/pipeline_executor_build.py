"""TVM's ``tvm.contrib.pipeline_executor_build``: describe a pipeline of modules and build it.

A pipeline runs several Relay modules one after another, each module's outputs feeding
inputs of later modules. :class:`PipelineConfig` records the connections the way TVM
scripts write them::

    cfg = PipelineConfig()
    cfg["input"]["data_a"].connect(cfg[mod1]["input"]["data_0"])     # pipeline input
    cfg[mod1]["output"][0].connect(cfg[mod2]["input"]["data_n_0"])   # module to module
    cfg[mod2]["output"][0].connect(cfg["output"]["0"])              # pipeline output
    cfg["param_group"]["param_0"].connect(cfg[mod1]["param"])       # parameters by group
    cfg[mod1].target, cfg[mod1].dev = "llvm", tvm.cpu(0)

Wrong connections raise :class:`~relaykit.errors.PipelineConfigError` (a
``RuntimeError``, as TVM raises) when made. :func:`build` builds every module with
``relay.build`` and returns a :class:`PipelineExecutorFactoryModule`, which
:class:`relaykit.contrib.pipeline_executor.PipelineModule` runs, or which
``export_library(directory)`` writes to disk (one library per module and a JSON
configuration file, whose path it returns).

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> mod = tvm.IRModule.from_expr(relay.Function([x], x + x))
>>> cfg = PipelineConfig()
>>> cfg["input"]["a"].connect(cfg[mod]["input"]["x"])
>>> cfg[mod]["output"][0].connect(cfg["output"]["0"])
>>> cfg.get_config()["input_connection"]
[{'global_interface_name': 'a', 'mod_idx': 0, 'module_interface_name': 'x'}]
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from relaykit.errors import PipelineConfigError
from relaykit.execution.build_module import build as relay_build
from relaykit.ir.module import IRModule
from relaykit.ir.types import TupleType
from relaykit.runtime.artifact import load_module
from relaykit.runtime.ndarray import Device, cpu, device
from relaykit.transform.infer_type import infer_module

__all__ = [
    "PipelineConfig",
    "PipelineExecutorFactoryModule",
    "build",
    "pipeline_executor_build_enabled",
]

#: The configuration file :meth:`PipelineExecutorFactoryModule.export_library` writes.
CONFIG_FILE = "pipeline_config.json"


def pipeline_executor_build_enabled() -> bool:
    """Whether pipelines can be built: always (TVM builds them only when compiled in)."""
    return True


class Binding:
    """One end of a connection: an input, output or parameter slot of a module or of the
    pipeline itself. ``owner`` is a :class:`ModuleWrapper` or None for the pipeline."""

    def __init__(self, owner: ModuleWrapper | None, io: str, name: Any) -> None:
        self.owner = owner
        self.io = io  # "input", "output" or "param"
        self.name = name
        self.bindings: list[Binding] = []
        self.parents: list[Binding] = []

    def __repr__(self) -> str:
        where = "pipeline" if self.owner is None else f"mod{self.owner.idx}"
        return f"{where}.{self.io}({self.name})"

    def _module_upstream(self) -> set[int]:
        """The ids of the modules whose outputs flow into this binding's module."""
        seen: set[int] = set()
        stack = [self.owner] if self.owner is not None else []
        while stack:
            mod = stack.pop()
            assert mod is not None
            for b in mod.input_bindings.values():
                for p in b.parents:
                    up = p.owner
                    if up is not None and id(up) not in seen:
                        seen.add(id(up))
                        stack.append(up)
        return seen

    def connect(self, other: Binding) -> None:
        """Connect this slot to ``other`` (data flows from ``self`` to ``other``)."""
        why = self._refuse(other)
        if why:
            raise PipelineConfigError(f"cannot connect {self} to {other}: {why}")
        self.bindings.append(other)
        other.parents.append(self)

    def _refuse(self, other: Binding) -> str:
        if not isinstance(other, Binding):
            return f"connect takes an interface of a PipelineConfig, got {type(other).__name__}"
        if self.io == "param" or other.io == "param":
            ok = self.io == other.io and self.owner is None and other.owner is not None
            return "" if ok else "a parameter group connects to a module's 'param' only"
        why = self._refuse_flow(other)
        if not why and other.parents and other.io == "input":
            why = f"{other} already has a producer ({other.parents[0]})"
        return why

    def _refuse_flow(self, other: Binding) -> str:
        mine, theirs = self.owner, other.owner
        if mine is None:
            if self.io == "output":
                return "the pipeline's outputs are ends; connect module outputs to them"
            ok = theirs is not None and other.io == "input"
            return "" if ok else "a pipeline input connects to a module's input only"
        if self.io == "input":
            return "a module's input is an end; connect something to it instead"
        if theirs is None:
            ok = other.io == "output"
            return "" if ok else "a module output connects to a module input or a pipeline output"
        if other.io != "input":
            return "a module output connects to another module's input"
        if theirs is mine:
            return "a module cannot feed its own input"
        if id(theirs) in self._module_upstream():
            return "the connection would make a cycle between modules"
        return ""


class _Slots:
    """``cfg[mod]["input"]`` / ``["output"]`` / ``cfg["input"]``...: bindings by key, made
    on first use; ``check(key)`` refuses keys the module does not have."""

    def __init__(self, owner: ModuleWrapper | None, io: str, check: Callable[[Any], str]) -> None:
        self.owner, self.io, self._check = owner, io, check
        self.bindings: dict[Any, Binding] = {}

    def __getitem__(self, key: Any) -> Binding:
        why = self._check(key)
        if why:
            raise PipelineConfigError(why)
        b = self.bindings.get(key)
        if b is None:
            b = self.bindings[key] = Binding(self.owner, self.io, key)
        return b

    def values(self) -> list[Binding]:
        return list(self.bindings.values())


class ModuleWrapper:
    """One module of a pipeline with its build settings (``target``, ``dev``,
    ``cpu_affinity``, ``fcompile``, ``build``, ``params``, ``target_host``, ``name``)."""

    def __init__(self, mod: IRModule, idx: int) -> None:
        typed = infer_module(mod)
        main = typed["main"]
        self.mod = mod
        self.idx = idx
        self.input_names = [p.name_hint for p in main.params]
        ret = main.checked_type.ret_type  # type: ignore[attr-defined]
        self.num_outputs = len(ret.fields) if isinstance(ret, TupleType) else 1
        self.target: Any = "llvm"
        self.dev: Device = cpu(0)
        self.cpu_affinity = ""
        self.fcompile: Any = None
        self.build_func: Any = None
        self.params: Any = None
        self.target_host: Any = None
        self.name = "default"
        self.inputs = _Slots(self, "input", self._check_input)
        self.outputs = _Slots(self, "output", self._check_output)
        self.param = Binding(self, "param", "param")

    @property
    def input_bindings(self) -> dict[Any, Binding]:
        return self.inputs.bindings

    def _check_input(self, name: Any) -> str:
        if name in self.input_names:
            return ""
        return f"module {self.idx} has no input {name!r} (its inputs: {self.input_names})"

    def _check_output(self, index: Any) -> str:
        if isinstance(index, int) and 0 <= index < self.num_outputs:
            return ""
        return f"module {self.idx} has no output {index!r} (it has {self.num_outputs})"

    def __getitem__(self, key: str) -> Any:
        if key == "input":
            return self.inputs
        if key == "output":
            return self.outputs
        if key == "param":
            return self.param
        raise PipelineConfigError(
            f"a pipeline module has 'input', 'output' and 'param', not {key!r}"
        )

    # TVM spells the custom build function ``build``
    @property
    def build(self) -> Any:
        return self.build_func

    @build.setter
    def build(self, fn: Any) -> None:
        self.build_func = fn


def _any_name(key: Any) -> str:
    return (
        "" if isinstance(key, str) and key else f"pipeline interface names are strings, got {key!r}"
    )


def _output_name(key: Any) -> str:
    try:
        int(key)
    except (TypeError, ValueError):
        return f"pipeline outputs are named by their index ('0', '1', ...), got {key!r}"
    return ""


class PipelineConfig:
    """The modules of a pipeline and their connections (see the module docstring)."""

    def __init__(self) -> None:
        self.mod_wrapper: dict[int, ModuleWrapper] = {}
        self._mods: list[IRModule] = []
        self.input_bindings = _Slots(None, "input", _any_name)
        self.output_bindings = _Slots(None, "output", _output_name)
        self.param_group_bindings = _Slots(None, "param", _any_name)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, IRModule):
            wrapper = self.mod_wrapper.get(id(key))
            if wrapper is None:
                wrapper = ModuleWrapper(key, len(self._mods))
                self.mod_wrapper[id(key)] = wrapper
                self._mods.append(key)
            return wrapper
        if key == "input":
            return self.input_bindings
        if key == "output":
            return self.output_bindings
        if key == "param_group":
            return self.param_group_bindings
        raise PipelineConfigError(
            f"a PipelineConfig is indexed by an IRModule, 'input', 'output' or 'param_group', "
            f"not {key!r}"
        )

    def modules(self) -> list[ModuleWrapper]:
        """The modules in an order where each comes after the modules that feed it."""
        wrappers = [self.mod_wrapper[id(m)] for m in self._mods]
        order: list[ModuleWrapper] = []
        placed: set[int] = set()
        while len(order) < len(wrappers):
            for w in wrappers:
                if id(w) in placed:
                    continue
                ups = {
                    id(p.owner)
                    for b in w.input_bindings.values()
                    for p in b.parents
                    if p.owner is not None
                }
                if ups <= placed:
                    order.append(w)
                    placed.add(id(w))
                    break
        for i, w in enumerate(order):
            w.idx = i
        return order

    def get_config(self) -> dict[str, Any]:
        """The configuration as TVM's ``get_config`` gives it: ``module_connection`` (per
        module: its outputs' consumers and build settings), ``input_connection`` and
        ``param_connection``."""
        mods = self.modules()
        module_connection: dict[IRModule, dict[str, Any]] = {}
        for w in mods:
            outputs = []
            for index in sorted(w.outputs.bindings):
                deps: list[dict[str, Any]] = []
                for b in w.outputs.bindings[index].bindings:
                    if b.owner is None:
                        deps.append({"global_output_index": int(b.name)})
                    else:
                        deps.append({"mod_idx": b.owner.idx, "input_name": b.name})
                outputs.append({"output_idx": int(index), "dependencies": deps})
            module_connection[w.mod] = {
                "pipeline": {"mod_idx": w.idx, "cpu_affinity": w.cpu_affinity, "output": outputs},
                "target_host": w.target_host,
                "mod_name": w.name,
                "build": w.build_func,
                "params": w.params,
                "target": w.target,
                "fcompile": w.fcompile,
                "dev": w.dev,
            }
        input_connection = [
            {"global_interface_name": name, "mod_idx": b.owner.idx, "module_interface_name": b.name}
            for name, src in self.input_bindings.bindings.items()
            for b in src.bindings
            if b.owner is not None
        ]
        param_connection = [
            {"global_param_name": name, "mod_idx": b.owner.idx}
            for name, src in self.param_group_bindings.bindings.items()
            for b in src.bindings
            if b.owner is not None
        ]
        return {
            "module_connection": module_connection,
            "input_connection": input_connection,
            "param_connection": param_connection,
        }

    def __str__(self) -> str:
        cfg = self.get_config()
        lines = ["Params"]
        lines += [
            f"  |{c['global_param_name']}: mod{c['mod_idx']}:param" for c in cfg["param_connection"]
        ]
        lines.append("Inputs")
        lines += [
            f"  |{c['global_interface_name']}: mod{c['mod_idx']}:{c['module_interface_name']}"
            for c in cfg["input_connection"]
        ]
        lines.append("connections")
        for conf in cfg["module_connection"].values():
            idx = conf["pipeline"]["mod_idx"]
            for out in conf["pipeline"]["output"]:
                for dep in out["dependencies"]:
                    to = (
                        f"output({dep['global_output_index']})"
                        if "global_output_index" in dep
                        else f"mod{dep['mod_idx']}.{dep['input_name']}"
                    )
                    lines.append(f"  |mod{idx}.output({out['output_idx']})-> {to}")
        return "\n".join(lines)


class PipelineExecutorFactoryModule:
    """The built modules of a pipeline and its connections (what :func:`build` returns)."""

    def __init__(self, stages: list[dict[str, Any]], config: dict[str, Any]) -> None:
        self.stages = stages  # per module: "lib", "dev", "cpu_affinity", "outputs"
        self.config = config  # "input_connection", "param_connection", "num_outputs"

    def export_library(self, directory_path: str | os.PathLike[str]) -> str:
        """Write each module's library and a JSON configuration into ``directory_path``;
        return the configuration file's path (for ``PipelineModule.load_library``)."""
        directory = os.fspath(directory_path)
        os.makedirs(directory, exist_ok=True)
        modules = []
        for i, stage in enumerate(self.stages):
            lib_path = os.path.join(directory, f"pipeline_mod{i}.rkmod")
            stage["lib"].export_library(lib_path)
            dev = stage["dev"]
            modules.append(
                {
                    "mod_idx": i,
                    "lib_name": os.path.basename(lib_path),
                    "dev": [str(dev.device_type), int(dev.device_id)],
                    "cpu_affinity": stage["cpu_affinity"],
                    "outputs": stage["outputs"],
                }
            )
        path = os.path.join(directory, CONFIG_FILE)
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"modules": modules, **self.config}, f, indent=1)
        return path

    @staticmethod
    def load_library(config_file: str | os.PathLike[str]) -> PipelineExecutorFactoryModule:
        """The factory written by :meth:`export_library` to ``config_file``."""
        path = os.fspath(config_file)
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        directory = os.path.dirname(path)
        stages = []
        for rec in data.pop("modules"):
            stages.append(
                {
                    "lib": load_module(os.path.join(directory, rec["lib_name"])),
                    "dev": device(rec["dev"][0], rec["dev"][1]),
                    "cpu_affinity": rec["cpu_affinity"],
                    "outputs": rec["outputs"],
                }
            )
        return PipelineExecutorFactoryModule(stages, data)


def build(pipe_config: PipelineConfig) -> PipelineExecutorFactoryModule:
    """Build every module of ``pipe_config`` (``relay.build`` with its target and params,
    or its own ``build`` function) and return the factory a ``PipelineModule`` runs."""
    if not isinstance(pipe_config, PipelineConfig):
        raise PipelineConfigError(f"build takes a PipelineConfig, got {type(pipe_config).__name__}")
    cfg = pipe_config.get_config()
    stages = []
    for mod, conf in cfg["module_connection"].items():
        builder = conf["build"] or relay_build
        lib = builder(
            mod, conf["target"], params=conf["params"], target_host=conf["target_host"],
            mod_name=conf["mod_name"],
        )  # fmt: skip
        stages.append(
            {
                "lib": lib,
                "dev": conf["dev"],
                "cpu_affinity": conf["pipeline"]["cpu_affinity"],
                "outputs": conf["pipeline"]["output"],
            }
        )
    outputs = {
        int(dep["global_output_index"])
        for conf in cfg["module_connection"].values()
        for out in conf["pipeline"]["output"]
        for dep in out["dependencies"]
        if "global_output_index" in dep
    }
    config = {
        "input_connection": cfg["input_connection"],
        "param_connection": cfg["param_connection"],
        "num_outputs": len(outputs),
    }
    return PipelineExecutorFactoryModule(stages, config)
