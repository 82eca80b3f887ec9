"""The graph executor: a :class:`GraphPlan` bound to buffers, run as a flat loop.

On creation the executor allocates the memory plan's pool blocks, one buffer
per graph input, shares the parameters (read-only), makes every entry a view
of its storage, binds every operator to its host kernel and every backend call
to its runtime module's function (``Module.bind_function``), all on those fixed
arrays. ``run()`` is then ``for step in steps: step()``. Errors name the step:
the plan node (``%12 = nn.conv2d(...)``) for host operators; the function,
backend and region operators for backend calls.

TVM's graph executor interface is exposed both as methods and as module
functions (``m["set_input"]``, ``m["run"]``...), which is what
:class:`relaykit.contrib.graph_executor.GraphModule` wraps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from relaykit.errors import BackendExecutionError, BuildError, ExecutionError, RelayKitError
from relaykit.runtime.module import Module
from relaykit.runtime.ndarray import Device, NDArray, cpu

from .graph_plan import GraphPlan
from .host_kernels import Scratch, bind_kernel
from .memory_plan import MemoryReport, memory_report

__all__ = ["GraphExecutor"]

_EXPORTED = (
    "set_input",
    "run",
    "get_output",
    "get_input",
    "get_num_outputs",
    "get_num_inputs",
    "get_input_index",
    "load_params",
)


def _group(values: list[np.ndarray], groups: Sequence[int]) -> list[Any]:
    out: list[Any] = []
    i = 0
    for g in groups:
        if g < 0:
            out.append(values[i])
            i += 1
        else:
            out.append(values[i : i + g])
            i += g
    return out


class GraphExecutor(Module):
    """Runs a plan on the host; backend calls go to ``lib``'s imported modules."""

    type_key: ClassVar[str] = "graph_executor"

    def __init__(
        self,
        plan: GraphPlan,
        lib: Module,
        params: Mapping[str, np.ndarray] | None = None,
        device: Device | None = None,
    ) -> None:
        super().__init__()
        self.plan = plan
        self.lib = lib
        self.device = device or cpu()
        self._input_index = {name: i for i, name in enumerate(plan.input_names)}
        self._param_names = set(plan.param_names)
        self._bound = set(plan.bound_params)
        self._param_entry = {n.name: n.outputs[0] for n in plan.nodes if n.kind == "param"}
        self._params: dict[str, np.ndarray] = {}
        # Input buffers and pool blocks, allocated once; parameters are shared, read-only.
        self._blocks: list[np.ndarray | None] = [
            np.zeros(spec.nbytes, np.uint8) if spec.kind != "param" else None
            for spec in plan.storage
        ]
        for name in plan.param_names:
            if params is not None and name in params:
                self._params[name] = self._readonly(params[name], name)
        self._steps: list[Callable[[], Any]] = []
        self._bind()

    # -- binding ----------------------------------------------------------------------------
    def _readonly(self, value: Any, name: str) -> np.ndarray:
        arr = value.numpy() if isinstance(value, NDArray) else np.asarray(value)
        spec = self.plan.entries[self._param_entry[name]]
        if arr.shape != spec.shape or arr.dtype.name != spec.dtype:
            raise ExecutionError(
                f"parameter {name!r} must be {spec.dtype}{list(spec.shape)}, got "
                f"{arr.dtype.name}{list(arr.shape)}"
            )
        view = np.asarray(arr, order="C").view()
        view.flags.writeable = False
        return view

    def _bind(self) -> None:
        plan = self.plan
        blocks = list(self._blocks)
        param_views: dict[int, np.ndarray] = {}
        for node in plan.nodes:
            if node.kind == "param":
                e = node.outputs[0]
                arr = self._params.get(node.name)
                if arr is None:  # not set yet: zeros until set_input/load_params
                    spec = plan.entries[e]
                    arr = np.zeros(spec.shape, spec.dtype)
                    self._params[node.name] = arr
                param_views[e] = arr
                blocks[plan.entries[e].storage] = arr.reshape(-1).view(np.uint8)
        views: list[np.ndarray] = []
        for i, spec in enumerate(plan.entries):
            view = param_views.get(i)
            if view is None:
                block = blocks[spec.storage]
                assert block is not None
                view = block[: spec.nbytes].view(spec.dtype).reshape(spec.shape)
            views.append(view)
        self._views = views
        self._inputs = [views[n.outputs[0]] for n in plan.nodes if n.kind == "input"]
        # Two binding passes: the first measures the scratch memory host kernels need.
        measuring = Scratch(None)
        self._bind_steps(measuring, dry_run=True)
        arena = np.zeros(measuring.peak + 64, np.uint8)
        self.workspace_bytes = measuring.peak
        self._steps = self._bind_steps(Scratch(arena), dry_run=False)

    def _bind_steps(self, scratch: Scratch, dry_run: bool) -> list[Callable[[], Any]]:
        steps: list[Callable[[], Any]] = []
        self._step_nodes: list[int] = []
        views = self._views
        for index, node in enumerate(self.plan.nodes):
            if node.kind in ("input", "param") or (node.kind == "op" and node.view):
                continue
            ins = [views[e] for e in node.inputs]
            outs = [views[e] for e in node.outputs]
            if node.kind == "op":
                scratch.reset()
                try:
                    run = bind_kernel(
                        node.name, node.attrs, _group(ins, node.groups), outs, scratch
                    )
                except RelayKitError:
                    raise
                except Exception as err:
                    raise BuildError(
                        f"cannot bind the kernel of {node.desc or node.name}: "
                        f"{type(err).__name__}: {err}"
                    ) from err
            elif dry_run:
                continue
            else:
                if not self.lib.implements_function(node.name, query_imports=True):
                    raise BuildError(
                        f"no runtime module implements {node.name!r} (backend "
                        f"{node.compiler!r}); the library was built without it or lost a module"
                    )
                run = self.lib.bind_function(node.name, ins, outs)
            steps.append(run)
            self._step_nodes.append(index)
        return steps

    def _step_error(self, i: int, err: Exception) -> ExecutionError:
        """``err`` raised by step ``i``, with the step's context."""
        node = self.plan.nodes[self._step_nodes[i]]
        detail = str(err) if isinstance(err, RelayKitError) else f"{type(err).__name__}: {err}"
        if node.kind == "extern":
            return BackendExecutionError(
                f"error in function {node.name} of backend {node.compiler!r} "
                f"(region ops: {', '.join(node.region_ops) or 'none'}): {detail}"
            )
        return ExecutionError(f"while running {node.desc or node.name}: {detail}")

    # -- TVM's graph executor interface ---------------------------------------------------------
    def set_input(self, key: Any = None, value: Any = None, **params: Any) -> None:
        """Set an input by name or index; keyword arguments set several at once.

        Names of parameters bound at build time (now constants) are ignored,
        as in TVM; a parameter ``p<k>`` can be replaced by name.
        """
        rebind = False
        if key is not None:
            rebind |= self._set_one(key, value, strict=True)
        for k, v in params.items():
            rebind |= self._set_one(k, v, strict=False)
        if rebind:
            self._bind()

    def _set_one(self, key: Any, value: Any, strict: bool) -> bool:
        """Set one input; True when a parameter changed (the steps must be bound again)."""
        if isinstance(key, int) and not isinstance(key, bool):
            if not 0 <= key < len(self._inputs):
                raise ExecutionError(f"input index {key} out of range ({len(self._inputs)} inputs)")
            name = self.plan.input_names[key]
        else:
            name = str(key)
        if name in self._input_index:
            buf = self._inputs[self._input_index[name]]
            arr = value.numpy() if isinstance(value, NDArray) else np.asarray(value)
            if arr.shape != buf.shape:
                raise ExecutionError(
                    f"input {name!r} expects {buf.dtype}{list(buf.shape)}, got an array of "
                    f"shape {list(arr.shape)} ({arr.dtype})"
                )
            if arr.dtype != buf.dtype and not np.can_cast(arr.dtype, buf.dtype, "same_kind"):
                raise ExecutionError(
                    f"input {name!r} expects {buf.dtype}{list(buf.shape)}, got {arr.dtype}"
                )
            np.copyto(buf, arr, casting="same_kind")
        elif name in self._param_names:
            self._params[name] = self._readonly(value, name)
            return True
        elif strict or name not in self._bound:
            known = ", ".join(self.plan.input_names) or "none"
            raise ExecutionError(f"the graph has no input {name!r}; its inputs are: {known}")
        return False

    def load_params(self, params: Mapping[str, Any]) -> None:
        """Set the parameters ``p0``, ``p1``... (from a dict; TVM loads them from bytes)."""
        for name, value in params.items():
            if name in self._param_names:
                self._params[name] = self._readonly(value, name)
        self._bind()

    def run(self, **inputs: Any) -> None:
        """Run the graph (after setting ``inputs``, if given)."""
        if inputs:
            self.set_input(**inputs)
        i = 0
        try:
            with np.errstate(all="ignore"):
                for i, step in enumerate(self._steps):  # noqa: B007 - read in the handler
                    step()
        except Exception as err:
            raise self._step_error(i, err) from err

    def get_num_outputs(self) -> int:
        return len(self.plan.heads)

    def get_num_inputs(self) -> int:
        return len(self._inputs)

    def get_input_index(self, name: str) -> int:
        if name not in self._input_index:
            raise ExecutionError(f"the graph has no input {name!r}")
        return self._input_index[name]

    def get_input(self, index: int | str, out: Any = None) -> NDArray:
        """The input buffer (by index or name), or a copy into ``out``."""
        i = self.get_input_index(index) if isinstance(index, str) else int(index)
        if not 0 <= i < len(self._inputs):
            raise ExecutionError(f"input index {i} out of range ({len(self._inputs)} inputs)")
        buf = self._inputs[i]
        if out is not None:
            return out.copyfrom(buf) if isinstance(out, NDArray) else NDArray(buf.copy())
        return NDArray(buf, self.device)

    def get_output(self, index: int, out: Any = None) -> NDArray:
        """Output ``index`` of the last run, as a new array (or copied into ``out``)."""
        if not 0 <= int(index) < len(self.plan.heads):
            raise ExecutionError(
                f"output index {index} out of range ({len(self.plan.heads)} outputs)"
            )
        value = self._views[self.plan.heads[int(index)]]
        if out is not None:
            return out.copyfrom(value)
        return NDArray(np.array(value, copy=True), self.device)

    # -- introspection ----------------------------------------------------------------------
    @property
    def num_steps(self) -> int:
        return len(self._steps)

    def memory_report(self) -> MemoryReport:
        """Intermediate memory with and without the plan (see :class:`MemoryReport`)."""
        return memory_report(self.plan, self.workspace_bytes)

    # -- module functions -------------------------------------------------------------------
    def function_names(self) -> list[str]:
        return list(_EXPORTED)

    def _own_function(self, name: str) -> Callable[..., Any] | None:
        return getattr(self, name) if name in _EXPORTED else None
