"""``relay.build``: optimise, hand partitioned functions to their codegens, plan the host.

>>> import numpy as np
>>> import relaykit as tvm
>>> from relaykit import relay
>>> from relaykit.contrib import graph_executor
>>> x = relay.var("x", shape=(1, 3))
>>> w = relay.var("w", shape=(2, 3))
>>> mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.relu(relay.nn.dense(x, w))))
>>> lib = build(mod, target="llvm", params={"w": np.ones((2, 3), "float32")})
>>> m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
>>> m.set_input("x", np.array([[1, 2, -9]], "float32"))
>>> m.run()
>>> m.get_output(0).numpy().tolist()
[[0.0, 0.0]]

The steps: bind ``params`` into ``main``; run :func:`build_passes` (type
inference, ``SimplifyInference``, ``FoldConstant``); give every function with
a ``Compiler`` attribute to its backend's codegen (``relay.ext.<name>``,
see :mod:`relaykit.execution.codegen`); lower ``main`` to a memory-planned
:class:`~relaykit.execution.graph_plan.GraphPlan`, with the host epilogue fusion
(:mod:`relaykit.execution.fusion`) planned and stored in it. The result is a
:class:`GraphExecutorFactoryModule`: ``lib["default"](dev)`` creates an
executor, ``lib.export_library(path)`` writes everything to one file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from relaykit.backends.host.kernels import has_host_kernel
from relaykit.byoc.choose import HOST_TARGETS
from relaykit.byoc.lift import lift_external_functions
from relaykit.errors import (
    ArtifactCorruptError,
    ArtifactError,
    BuildError,
    CodegenError,
    RelayKitError,
)
from relaykit.ir.expr import Function, checked_type_or_none
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.types import is_dynamic
from relaykit.runtime.module import Module, ModuleBlob, register_module_loader
from relaykit.runtime.ndarray import Device, NDArray
from relaykit.target import Target
from relaykit.transform.bind import bind_params_by_name
from relaykit.transform.infer_type import InferType
from relaykit.transform.pass_infra import Pass, Sequential
from relaykit.transform.pipeline import optimization_passes
from relaykit.transform.remove_unused_functions import remove_unused_functions

from .aot import AOTExecutorFactoryModule, build_aot
from .codegen.registry import get_codegen
from .evaluator import describe_call
from .fusion import fusion_of, host_passes, plan_fusion
from .graph_executor import GraphExecutor
from .graph_plan import GraphPlan
from .kernel_choices import apply_choices
from .lower import lower_to_plan
from .memory_plan import MemoryReport, memory_report

__all__ = [
    "build_graph",
    "build",
    "build_passes",
    "optimize",
    "compile_external_functions",
    "HostModule",
    "GraphExecutorFactoryModule",
    "HOST_TARGETS",
]


def build_passes() -> list[Pass]:
    """The optimisation passes ``relay.build`` runs on the host functions, in order: the
    standard pipeline of :mod:`relaykit.transform.pipeline` (each pass filtered by the
    ``PassContext``'s opt_level; at the default level 2: type inference,
    ``SimplifyInference``, ``FoldConstant``...), then the host's fusion passes
    (:func:`relaykit.execution.fusion.host_passes`: ``FuseLayerNorm`` and ``FuseGelu``, one
    kernel each, ``FoldTransposeIntoBatchMatmul``). Functions for backends are skipped."""
    return [*optimization_passes(), *host_passes(), InferType()]


def optimize(
    mod: IRModule, target: Any = None, params: Mapping[str, Any] | None = None
) -> tuple[IRModule, dict[str, Any]]:
    """``(optimized module, params)``: ``mod`` with ``params`` bound into ``main`` and the
    passes of :func:`build_passes` run, as ``relay.build`` would before planning (TVM's
    ``relay.optimize``). The ``PassContext`` in effect decides which passes run; the
    target is accepted for TVM's signature (relaykit optimises the same for every host).

    >>> import numpy as np
    >>> from relaykit import relay
    >>> x, w = relay.var("x", shape=(2,)), relay.var("w", shape=(2,))
    >>> mod = IRModule.from_expr(relay.Function([x, w], x * relay.exp(w)))
    >>> opt, _ = optimize(mod, "llvm", {"w": np.zeros(2, "float32")})
    >>> [p.name_hint for p in opt["main"].params]
    ['x']
    """
    if not isinstance(mod, IRModule):
        mod = IRModule.from_expr(mod)
    mod = mod.copy()
    if params:
        mod["main"] = bind_params_by_name(mod["main"], params)
    _ = target
    mod = Sequential(build_passes(), name="RelayOptimize")(mod)
    return mod, {}


class HostModule(Module):
    """The library of a build: the host part needs no code (its kernels are resolved by
    operator name), so it imports the backends' runtime modules and holds the scalar
    constants of the host graph.

    Scalars are what TVM compiles into its kernels as immediates, so, as with TVM, an
    executor made from the graph JSON and this library alone (``graph_executor.create``)
    has them without ``set_input(**params)``; larger constants stay parameters to set.
    """

    type_key: ClassVar[str] = "relaykit_host"

    def __init__(self, constants: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.constants: dict[str, np.ndarray] = {
            str(k): np.asarray(v) for k, v in (constants or {}).items()
        }

    def embedded_constants(self) -> dict[str, np.ndarray]:
        """The parameters this library carries (scalar constants), by plan name."""
        return dict(self.constants)

    def save_blob(self) -> ModuleBlob:
        return ModuleBlob(self.type_key, arrays=dict(self.constants), provider=__name__)

    @staticmethod
    def load_blob(blob: ModuleBlob) -> HostModule:
        return HostModule(blob.arrays)


class GraphExecutorFactoryModule(Module):
    """What ``relay.build`` returns: the plan, the parameters and the library.

    ``factory["default"](dev)`` makes a :class:`~relaykit.execution.graph_executor.GraphExecutor`.
    """

    type_key: ClassVar[str] = "graph_executor_factory"

    def __init__(
        self,
        plan: GraphPlan,
        lib: Module,
        params: Mapping[str, np.ndarray],
        mod_name: str = "default",
        target: str = "llvm",
    ) -> None:
        super().__init__()
        self.plan = plan
        self.param_arrays = {k: np.asarray(v) for k, v in params.items()}
        self.mod_name = mod_name
        self.target = target
        self.imported_modules = [lib]

    @property
    def lib(self) -> Module:
        return self.imported_modules[0]

    @property
    def graph_json(self) -> str:
        return self.plan.to_json()

    def get_graph_json(self) -> str:
        return self.graph_json

    def get_lib(self) -> Module:
        return self.lib

    @property
    def params(self) -> dict[str, NDArray]:
        """The build's parameters as TVM gives them (``NDArray``s; the NumPy arrays are
        ``param_arrays``)."""
        return self.get_params()

    def get_params(self) -> dict[str, NDArray]:
        return {k: NDArray(v) for k, v in self.param_arrays.items()}

    def create(self, device: Device | None = None) -> GraphExecutor:
        """A new executor for this build (its own buffers; parameters shared read-only)."""
        return GraphExecutor(self.plan, self.lib, self.param_arrays, device)

    def memory_report(self) -> MemoryReport:
        """Intermediate memory with and without the plan (workspace not included)."""
        return memory_report(self.plan)

    def function_names(self) -> list[str]:
        return [self.mod_name]

    def _own_function(self, name: str) -> Any:
        return self.create if name == self.mod_name else None

    def __iter__(self) -> Any:
        """TVM's legacy ``graph_json, lib, params = relay.build(...)``."""
        return iter((self.graph_json, self.lib, self.get_params()))

    def save_blob(self) -> ModuleBlob:
        return ModuleBlob(
            self.type_key,
            meta={"mod_name": self.mod_name, "target": self.target},
            files={"graph.json": self.graph_json.encode()},
            arrays=dict(self.param_arrays),
            provider=__name__,
        )

    @staticmethod
    def load_blob(blob: ModuleBlob) -> GraphExecutorFactoryModule:
        plan = GraphPlan.from_json(blob.files["graph.json"])
        _check_storage(plan)
        fusion_of(plan)  # an artifact made before plans carried the fusion: planned here
        missing = [p for p in plan.param_names if p not in blob.arrays]
        if missing:
            raise ArtifactCorruptError(
                f"the artifact's parameters {', '.join(missing)} are missing"
            )
        factory = GraphExecutorFactoryModule(
            plan, HostModule(), blob.arrays, str(blob.meta["mod_name"]), str(blob.meta["target"])
        )
        factory.imported_modules = []  # the loader attaches the stored library
        return factory

    def __repr__(self) -> str:
        return (
            f"GraphExecutorFactoryModule({self.plan.num_steps} steps, "
            f"{len(self.param_arrays)} params, "
            f"imports={[m.type_key for m in self.lib.imported_modules]})"
        )


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def _check_storage(plan: GraphPlan) -> None:
    """A loaded plan's buffers, before an executor allocates them: each no larger than the
    largest tensor it holds (as the memory planner makes them), all together within this
    machine's memory."""
    largest = [0] * len(plan.storage)
    for e in plan.entries:
        largest[e.storage] = max(largest[e.storage], e.nbytes)
    for sid, (spec, need) in enumerate(zip(plan.storage, largest, strict=True)):
        if spec.nbytes > need:
            raise ArtifactCorruptError(
                f"the graph plan's storage {sid} is {spec.nbytes} bytes, but the largest tensor "
                f"it holds is {need} bytes; the plan was changed after export"
            )
    total = sum(s.nbytes for s in plan.storage if s.kind != "param")
    memory = _physical_memory()
    if memory is not None and total > memory:
        raise ArtifactError(
            f"the graph plan needs {total / 2**30:.1f} GiB of buffers, more than this "
            f"machine's {memory / 2**30:.1f} GiB of memory"
        )


register_module_loader(HostModule.type_key, HostModule.load_blob)
register_module_loader(GraphExecutorFactoryModule.type_key, GraphExecutorFactoryModule.load_blob)


def _host_target(target: Any) -> str:
    if target is None:  # TVM's Target.target_or_current, defaulting to the host
        target = Target.current()
        if target is None:
            return "llvm"
    if isinstance(target, Mapping):  # TVM's {"cpu": "llvm"} form
        values = list(target.values())
        if len(values) == 1:
            return _host_target(values[0])
    if isinstance(target, (list, tuple)) and target:  # TVM's heterogeneous target list
        for one in target:
            if _target_kind(one) not in HOST_TARGETS:
                raise BuildError(
                    f"target {_target_text(one)!r} (one of the {len(target)} targets given) "
                    f"is not available: {_HOST_ONLY}"
                )
        return _host_target(target[0])
    text = _target_text(target)
    if _target_kind(target) in HOST_TARGETS:
        return text
    raise BuildError(f"target {text!r} is not available: {_HOST_ONLY}")


_HOST_ONLY = (
    "relaykit builds for the host CPU; use 'llvm', 'c' or 'cpu', or 'host' (backends such as "
    "DNNL are chosen by partitioning, not by target)"
)


def _target_text(target: Any) -> str:
    return str(getattr(target, "kind", target))


def _target_kind(target: Any) -> str:
    words = _target_text(target).split()
    return words[0] if words else ""


def compile_external_functions(mod: IRModule) -> list[Module]:
    """Run every backend's codegen on its functions; the runtime modules it returns."""
    by_target: dict[str, list[Function]] = {}
    for _, fn in mod.items():
        compiler = fn.attrs.get("Compiler") if fn.attrs else None
        if compiler:
            by_target.setdefault(str(compiler), []).append(fn)
    modules: list[Module] = []
    for target, funcs in by_target.items():
        info = get_codegen(target)
        batches = [funcs] if info.per_module else [[f] for f in funcs]
        for batch in batches:
            symbols = [str(f.attrs.get("global_symbol", "?")) for f in batch]
            try:
                out = info.compile(batch if info.per_module else batch[0])
            except RelayKitError:
                raise
            except Exception as err:
                raise CodegenError(
                    f"the codegen of backend {target!r} failed on {', '.join(symbols)}: "
                    f"{type(err).__name__}: {err}"
                ) from err
            if not isinstance(out, Module):
                raise CodegenError(
                    f"the codegen of backend {target!r} returned {type(out).__name__} for "
                    f"{', '.join(symbols)}; it must return a runtime Module"
                )
            for sym in symbols:
                if not out.implements_function(sym, query_imports=True):
                    raise CodegenError(
                        f"the runtime module backend {target!r} returned has no function {sym!r} "
                        f"(it has: {', '.join(out.function_names()) or 'none'})"
                    )
            modules.append(out)
    return modules


def _require_static(mod: IRModule, when: str, params_only: bool = False) -> None:
    """A :class:`~relaykit.errors.BuildError` naming the first value whose type has a
    ``?`` or symbolic dimension: the graph executor plans static storage only."""
    for gv, fn in mod.functions.items():
        if not isinstance(fn, Function):
            continue
        for p in fn.params:
            t = checked_type_or_none(p) or p.type_annotation
            if t is not None and is_dynamic(t):
                what = f"parameter %{p.name_hint} of @{gv.name_hint}"
                raise BuildError(_DYNAMIC.format(what=what, ty=t, when=when))
        if params_only:
            continue
        for node in post_order(fn.body):
            t = checked_type_or_none(node)
            if t is not None and is_dynamic(t):
                raise BuildError(_DYNAMIC.format(what=describe_call(node), ty=t, when=when))


_DYNAMIC = (
    "{what} has the dynamic type {ty} ({when}); relay.build and the graph executor need "
    "static shapes. Compile dynamic models for the VM instead: relay.vm.compile(mod, target) "
    "or relay.create_executor('vm', mod), or give every input a static shape"
)


#: The attribute naming the outputs of ``main`` (of the function, as in TVM, or of the
#: module, where the ONNX importer puts the model's output names).
OUTPUT_NAMES_ATTR = "output_tensor_names"


def output_tensor_names(mod: IRModule, count: int) -> list[str]:
    """The names of ``main``'s ``count`` outputs, when ``mod`` gives them (distinct
    strings, one per output), else ``[]``."""
    value = mod["main"].attrs.get(OUTPUT_NAMES_ATTR) if "main" in mod else None
    if value is None:
        value = mod.attrs.get(OUTPUT_NAMES_ATTR)
    if not isinstance(value, (list, tuple)):
        return []
    names = [str(v) for v in value]
    return names if len(names) == count and len(set(names)) == count else []


def build(
    ir_mod: IRModule | Function,
    target: Any = None,
    target_host: Any = None,
    executor: Any = None,
    runtime: Any = None,
    workspace_memory_pools: Any = None,
    params: Mapping[str, Any] | None = None,
    mod_name: str = "default",
) -> GraphExecutorFactoryModule | AOTExecutorFactoryModule:
    """Build ``ir_mod`` for the host with the graph executor (TVM's ``relay.build``), or,
    with ``executor=Executor("aot")``, as ahead-of-time C (:mod:`relaykit.execution.aot`).

    Without ``target``, the target entered with ``with tvm.target.Target(...):`` in this
    thread is used, else ``llvm``."""
    kind = getattr(executor, "name", executor) or "graph"
    if kind not in ("graph", "aot"):
        raise BuildError(
            f"executor {kind!r} is not available in relay.build; relaykit builds for the graph "
            "executor or ahead-of-time C ('aot'); use relay.create_executor('vm' or 'debug') "
            "for control flow"
        )
    if kind == "graph":
        return build_graph(ir_mod, target, target_host, params, mod_name)
    source, mod, _, target_name = _optimized(ir_mod, target, target_host, params)
    options = dict(getattr(executor, "attrs", None) or {})
    return build_aot(mod, str(source), mod_name, target_name, options)


def build_graph(
    ir_mod: IRModule | Function,
    target: Any = None,
    target_host: Any = None,
    params: Mapping[str, Any] | None = None,
    mod_name: str = "default",
) -> GraphExecutorFactoryModule:
    """:func:`build` for the graph executor: the factory of a graph-executor module.

    >>> import relaykit as tvm
    >>> from relaykit import relay
    >>> x = relay.var("x", shape=(2,))
    >>> build_graph(relay.Function([x], relay.exp(x))).create().get_num_outputs()
    1
    """
    source, mod, bound, target_name = _optimized(ir_mod, target, target_host, params)
    lib = HostModule()
    for m in compile_external_functions(mod):
        lib.import_module(m)
    plan, consts = lower_to_plan(mod)
    missing = sorted({n.name for n in plan.nodes if n.kind == "op" and not has_host_kernel(n.name)})
    if missing:
        raise BuildError(
            f"operators {', '.join(missing)} have no kernel the graph executor can run; "
            "partition them to a backend that supports them"
        )
    plan.bound_params = bound
    apply_choices(plan)  # tuned kernel choices in force (autotvm.apply_history_best)
    plan.fusion = plan_fusion(plan)  # stored in the plan: executors and artifacts reuse it
    plan.output_names = output_tensor_names(source, len(plan.heads))
    lib.constants = {k: np.asarray(v) for k, v in consts.items() if np.ndim(v) == 0}
    return GraphExecutorFactoryModule(plan, lib, consts, mod_name, target_name)


def _optimized(
    ir_mod: IRModule | Function,
    target: Any,
    target_host: Any,
    params: Mapping[str, Any] | None,
) -> tuple[IRModule, IRModule, list[str], str]:
    """``(the module given, the module optimised for the build, the parameters bound,
    the host target's name)``."""
    target_name = _host_target(target)
    if target_host is not None:
        _host_target(target_host)
    if isinstance(ir_mod, Function):
        ir_mod = IRModule.from_expr(ir_mod)
    if not isinstance(ir_mod, IRModule):
        raise BuildError(f"relay.build takes an IRModule, got {type(ir_mod).__name__}")
    mod = lift_external_functions(ir_mod.copy())
    if "main" in mod:
        # Only main runs: the globals it does not reach (a Prelude's, say) are not built.
        mod = remove_unused_functions(mod)
    bound: list[str] = []
    if params:
        names = {p.name_hint for p in mod["main"].params}
        bound = [k for k in params if k in names]
        mod["main"] = bind_params_by_name(mod["main"], params)
    _require_static(mod, "the input", params_only=True)
    mod = Sequential(build_passes(), name="RelayBuild")(mod)
    _require_static(mod, "after optimisation")
    return ir_mod, mod, bound, target_name
