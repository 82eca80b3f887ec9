"""``relay.vm``: compile a module for the Relay virtual machine.

>>> import numpy as np
>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x)))
>>> exe = compile(mod, target="llvm")
>>> vm = tvm.runtime.vm.VirtualMachine(exe, tvm.cpu())
>>> vm.invoke("main", np.array([1, 2], "float32")).numpy().tolist()
[2.0, 4.0]

The steps: bind ``params`` into ``main``; type-check; run the optimisation
pipeline (when the module has no ADT code; dynamic shapes are optimised too);
compile every function with a ``Compiler`` attribute with its backend's codegen
(as ``relay.build`` does); compile the other functions to bytecode
(:mod:`.compiler`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from relaykit.errors import BuildError
from relaykit.execution.build_module import (
    HOST_TARGETS,
    HostModule,
    build_passes,
    compile_external_functions,
)
from relaykit.execution.vm import primitives as primitives
from relaykit.execution.vm.compiler import ProgramCompiler
from relaykit.ir.adt import Constructor, Match
from relaykit.ir.expr import Expr, Function, GlobalVar
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.runtime.ndarray import Device, NDArray
from relaykit.runtime.vm import Executable, VirtualMachine, VMExecutableModule
from relaykit.transform.bind import bind_params_by_name
from relaykit.transform.infer_type import infer_module
from relaykit.transform.pass_infra import Sequential
from relaykit.transform.remove_unused_functions import remove_unused_functions

__all__ = ["compile", "VMCompiler", "VMExecutor", "Executable", "VirtualMachine"]


def _optimizable(mod: IRModule) -> bool:
    """Whether the graph optimisation pipeline applies: no ADT code (its passes do not
    rewrite ``match`` and constructors). Dynamic shapes are fine: the folding passes
    leave what they cannot decide at compile time as it is."""
    for _, fn in mod.items():
        for node in post_order(fn):
            if type(node) in (Match, Constructor):
                return False
    return True


def _bind_params(mod: IRModule, params: Mapping[str, Any] | None) -> IRModule:
    if not params or "main" not in mod:
        return mod
    mod = mod.copy()
    values = {k: v.numpy() if isinstance(v, NDArray) else np.asarray(v) for k, v in params.items()}
    mod["main"] = bind_params_by_name(mod["main"], values)
    return mod


def _check_target(target: Any) -> None:
    """The VM runs on the host CPU: ``llvm``, ``c``, ``cpu`` (a dict of one of them)."""
    if target is None:
        return
    if isinstance(target, Mapping):
        for t in target.values():
            _check_target(t)
        return
    text = str(getattr(target, "kind", target)).split()
    if text and text[0] not in HOST_TARGETS:
        raise BuildError(
            f"target {' '.join(text)!r} is not available for the VM: relaykit runs on the host "
            "CPU; use 'llvm', 'c' or 'cpu' (backends such as DNNL are chosen by partitioning)"
        )


class VMCompiler:
    """TVM's ``relay.vm.VMCompiler``: ``lower(mod, target, params)`` then ``get_exec()``,
    or ``optimize(mod, target, params)`` to see the module the VM compiles."""

    def __init__(self) -> None:
        self.params: dict[str, Any] = {}
        self.exec: Executable | None = None

    def set_params(self, params: Mapping[str, Any]) -> None:
        self.params.update(params)

    def optimize(
        self, mod: IRModule, target: Any = None, target_host: Any = None, params: Any = None
    ) -> tuple[IRModule, dict[str, Any]]:
        """The module after parameter binding and the optimisation pipeline."""
        if isinstance(mod, Function):
            mod = IRModule.from_expr(mod)
        if not isinstance(mod, IRModule):
            raise BuildError(f"the VM compiles an IRModule, got {type(mod).__name__}")
        _check_target(target)
        all_params = {**self.params, **(params or {})}
        mod = _bind_params(mod, all_params)
        mod = mod.copy()
        if "main" in mod:  # as TVM's VM compiler: only what main reaches is compiled
            mod = remove_unused_functions(mod)
        infer_module(mod)
        if _optimizable(mod):
            mod = Sequential(build_passes(), name="VMOptimize")(mod)
        return mod, {}

    def lower(
        self, mod: IRModule, target: Any = None, target_host: Any = None, params: Any = None
    ) -> None:
        mod, _ = self.optimize(mod, target, target_host, params)
        lib = HostModule()
        for m in compile_external_functions(mod):
            lib.import_module(m)
        prog = ProgramCompiler(mod)
        prog.compile()
        funcs = [f for f in prog.functions if f is not None]
        if len(funcs) != len(prog.functions):  # pragma: no cover - every slot is filled
            raise BuildError("VM compiler: a function was not compiled")
        self.exec = Executable(VMExecutableModule(funcs, prog.primitives, prog.constants, lib))

    def codegen(self) -> None:
        """Kept for TVM's two-step interface: ``lower`` already generated the code."""

    def get_exec(self) -> Executable:
        if self.exec is None:
            raise BuildError("VMCompiler.get_exec: call lower(mod, target) first")
        return self.exec


def compile(
    mod: IRModule | Function,
    target: Any = None,
    target_host: Any = None,
    params: Mapping[str, Any] | None = None,
) -> Executable:
    """Compile ``mod`` to a VM :class:`Executable` (TVM's ``relay.vm.compile``)."""
    compiler = VMCompiler()
    if params:
        compiler.set_params(params)
    compiler.lower(mod, target, target_host)  # type: ignore[arg-type]
    compiler.codegen()
    return compiler.get_exec()


class VMExecutor:
    """``relay.create_executor("vm", mod, device, target)``: compiles ``mod`` once;
    ``evaluate()`` returns a callable running ``main`` on the VM."""

    def __init__(
        self, mod: IRModule | None, device: Device | None = None, target: Any = "llvm"
    ) -> None:
        if mod is None:
            raise BuildError("the VM executor needs a module")
        self.mod = mod
        self.device = device
        self.target = target
        self.executable: Executable | None = None
        self.vm: VirtualMachine | None = None

    def _make_executor(self, expr: Expr | None = None) -> Any:
        mod = self.mod
        if expr is not None and not (isinstance(expr, GlobalVar) and expr.name_hint == "main"):
            mod = mod.copy()
            mod["main"] = expr if not isinstance(expr, GlobalVar) else mod[expr.name_hint]
        if self.vm is None or expr is not None:
            self.executable = compile(mod, target=self.target)
            self.vm = VirtualMachine(self.executable, self.device)
        vm = self.vm
        main = vm.functions[vm.module.func_index["main"]]

        def _vm_wrapper(*args: Any, **kwargs: Any) -> Any:
            return vm.invoke("main", *args, **kwargs)

        _vm_wrapper.__doc__ = f"main({', '.join(main.params)}) on the Relay VM"

        return _vm_wrapper

    def evaluate(self, expr: Expr | None = None, binds: Any = None) -> Any:
        return self._make_executor(expr)
