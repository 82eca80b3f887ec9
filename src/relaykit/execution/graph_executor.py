"""The graph executor: a :class:`GraphPlan` bound to buffers, run as a flat loop.

On creation the executor allocates the memory plan's pool blocks, one buffer
per graph input, shares the parameters (read-only), makes every entry a view
of its storage, binds every operator to its host kernel and every backend call
to its runtime module's function (``Module.bind_function``), all on those fixed
arrays. ``run()`` is then ``for step in steps: step()``. Errors name the step:
the plan node (``%12 = nn.conv2d(...)``) for host operators; the function,
backend and region operators for backend calls.

With relaykit's native host kernels (:mod:`relaykit.backends.host.native`,
decided once when the executor is created), a convolution or dense layer and
the bias, residual and clamp nodes after it are bound as one step
(:mod:`relaykit.execution.fusion`); its errors name the producer and the
fused operators.

Threads: an executor may be shared by threads, as an ONNX Runtime session can
(TVM's GraphExecutor cannot). Each thread that uses it gets its own input,
intermediate and output buffers, workspace and bound steps, made on its first
call (the first thread takes those made at creation), so ``set_input``,
``run`` and ``get_output`` in one thread never see another thread's values:
set, run and read in the same thread. Parameters are shared and read-only;
replacing one applies to every thread's next call. Executors made from one
build (``lib["default"](dev)`` called again) share only the parameters and the
compiled code, and run in parallel.

TVM's graph executor interface is exposed both as methods and as module
functions (``m["set_input"]``, ``m["run"]``...), which is what
:class:`relaykit.contrib.graph_executor.GraphModule` wraps.
"""

from __future__ import annotations

import contextlib
import operator
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from relaykit.backends.host import native as host_native
from relaykit.backends.host.kernels import Scratch, bind_kernel
from relaykit.dtypes import converts_exactly
from relaykit.errors import (
    ArtifactCorruptError,
    BackendExecutionError,
    BuildError,
    ExecutionError,
    ExecutorUsageError,
    RelayKitError,
)
from relaykit.runtime.contention import get_monitor
from relaykit.runtime.module import Module
from relaykit.runtime.ndarray import Device, NDArray, cpu
from relaykit.runtime.params import load_param_dict
from relaykit.runtime.threads import get_policy

from . import fusion
from .graph_plan import EntrySpec, GraphPlan
from .memory_plan import MemoryReport, memory_report

__all__ = ["GraphExecutor"]

_EXPORTED = (
    "set_input",
    "set_input_zero_copy",
    "run",
    "get_output",
    "get_input",
    "get_num_outputs",
    "get_num_inputs",
    "get_input_index",
    "load_params",
)
_THREAD_NOTE = (
    " (each thread that uses an executor has its own inputs and outputs: set them, run and "
    "read the outputs in the same thread)"
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


def _type_str(spec: EntrySpec) -> str:
    return f"{spec.dtype}{list(spec.shape)}"


def _as_array(value: Any, what: str, name: str, spec: EntrySpec) -> np.ndarray:
    """``value`` (an array, an NDArray, nested lists, a scalar) as a numeric NumPy array;
    ``what`` ("input", "parameter"), ``name`` and ``spec`` are for the error message."""
    if type(value) is np.ndarray:
        arr = value
    elif isinstance(value, NDArray):
        arr = value.numpy()
    else:
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError, OverflowError) as err:
            raise ExecutorUsageError(
                f"{what} {name!r} expects an array of {_type_str(spec)}; NumPy cannot make one "
                f"of the given {type(value).__name__} ({err}): pass a numpy.ndarray or a "
                "tvm.nd.array"
            ) from None
    if arr.dtype.kind in "OUSMm":  # objects, strings, dates (ml_dtypes' kind is "V")
        raise ExecutorUsageError(
            f"{what} {name!r} expects an array of {_type_str(spec)}, got {arr.dtype} values "
            f"(from a {type(value).__name__}): pass a numpy.ndarray or a tvm.nd.array"
        )
    return arr


def _parked(run: Callable[[], Any]) -> Callable[[], Any]:
    """A backend call that first parks the native pool's spinning threads (a oneDNN
    region's OpenMP threads need the cores)."""
    park = get_policy().park

    def call() -> Any:
        park()
        return run()

    return call


def _describe(value: Any) -> str:
    shape = getattr(value, "shape", None)
    return f"a {type(value).__name__}" + (f" of shape {list(shape)}" if shape is not None else "")


class _ThreadState:
    """One thread's buffers and the steps bound to them (see the module docstring)."""

    __slots__ = (
        "arena",
        "blocks",
        "first",
        "inputs",
        "ran",
        "step_nodes",
        "steps",
        "unset",
        "version",
        "views",
    )

    def __init__(self, blocks: list[np.ndarray | None], arena: np.ndarray, first: bool) -> None:
        self.blocks = blocks
        self.arena = arena
        #: Whether these are the buffers made with the executor (taken by the first thread).
        self.first = first
        self.views: list[np.ndarray] = []
        self.inputs: list[np.ndarray] = []
        self.steps: list[Callable[[], Any]] = []
        self.step_nodes: list[int] = []
        #: Names of the inputs this thread has not set yet.
        self.unset: set[int] = set()  # indices of the inputs not set yet
        #: Whether the last run of this thread completed (the outputs are valid).
        self.ran = False
        #: The parameter version the steps are bound to.
        self.version = -1


class GraphExecutor(Module):
    """Runs a plan on the host; backend calls go to ``lib``'s imported modules.

    Safe to share between threads: every thread has its own buffers (see the module
    docstring); many executors of one build run in parallel.
    """

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
        self._input_names = plan.input_names  # a property that walks the plan: read once
        # Inputs are tracked by index: several may share a name (TVM allows it), and a
        # name then stands for the first of them.
        self._input_index: dict[str, int] = {}
        for i, name in enumerate(self._input_names):
            self._input_index.setdefault(name, i)
        self._param_names = set(plan.param_names)
        self._bound = set(plan.bound_params)
        self._param_entry = {n.name: n.outputs[0] for n in plan.nodes if n.kind == "param"}
        self._input_entries = [n.outputs[0] for n in plan.nodes if n.kind == "input"]
        self._input_dtypes = [np.dtype(plan.entries[e].dtype) for e in self._input_entries]
        # The inputs something reads (an operator, a backend call or an output): run() needs
        # only these set; an input nothing reads may stay unset, as in TVM.
        read = {e for n in plan.nodes for e in n.inputs} | set(plan.heads)
        self._read_inputs = frozenset(i for i, e in enumerate(self._input_entries) if e in read)
        self._lock = threading.Lock()
        self._local = threading.local()
        self._monitor = get_monitor()
        # Native host kernels: decided once (every thread binds the same kernels, so the
        # scratch measured below fits them all); producers with their epilogues fused, as
        # the build planned them (ignored when the native kernels are off).
        self._native = host_native.is_enabled()
        self._fusion = fusion.fusion_of(plan) if self._native else {}
        #: Fused steps bound, by producer node: the epilogue operators (for errors).
        self._fused_names: dict[int, tuple[str, ...]] = {}
        # Parameters: a dict replaced (never changed in place) under the lock, with a version
        # that tells every thread to bind its steps again.
        given: dict[str, np.ndarray] = {}
        # Constants the library carries (a build's HostModule holds the scalar ones, which
        # TVM compiles into its kernels), then the parameters given.
        embedded = getattr(lib, "embedded_constants", None)
        carried = embedded() if callable(embedded) else {}
        for name in plan.param_names:
            if params is not None and name in params:
                given[name] = self._readonly(params[name], name)
            elif name in carried:
                given[name] = self._readonly(carried[name], name)
        self._unset_params = frozenset(self._param_names - set(given))
        for name in self._unset_params:  # zeros until set_input/load_params; run() refuses
            spec = plan.entries[self._param_entry[name]]
            given[name] = self._readonly(np.zeros(spec.shape, spec.dtype), name)
        self._params = given
        self._version = 0
        # The first thread's buffers, bound now so that a missing backend function is
        # reported at creation. Binding runs twice: a dry run measures the scratch memory
        # host kernels need.
        blocks = self._alloc_blocks()
        measuring = Scratch(None)
        with host_native.chosen(self._native):
            self._bind_steps(self._make_views(blocks, given), measuring, dry_run=True)
        self.workspace_bytes = measuring.peak
        first = self._new_state(blocks, given, 0, first=True)
        self._num_steps = len(first.steps)
        self._spare: _ThreadState | None = first

    # -- per-thread state -----------------------------------------------------------------------
    def _alloc_blocks(self) -> list[np.ndarray | None]:
        """Input buffers and pool blocks (parameters are shared, not allocated)."""
        return [
            np.zeros(spec.nbytes, np.uint8) if spec.kind != "param" else None
            for spec in self.plan.storage
        ]

    def _new_state(
        self,
        blocks: list[np.ndarray | None],
        params: Mapping[str, np.ndarray],
        version: int,
        first: bool = False,
    ) -> _ThreadState:
        state = _ThreadState(blocks, np.zeros(self.workspace_bytes + 64, np.uint8), first)
        state.unset = set(range(len(self._input_entries)))
        self._bind_state(state, params, version)
        return state

    def _state(self) -> _ThreadState:
        """The calling thread's buffers, made (or bound again after a parameter changed)
        when needed."""
        state: _ThreadState | None = getattr(self._local, "state", None)
        if state is None or state.version != self._version:
            state = self._refresh(state)
        return state

    def _refresh(self, state: _ThreadState | None) -> _ThreadState:
        with self._lock:
            params, version = self._params, self._version
            if state is None:
                state, self._spare = self._spare, None
        if state is None:
            state = self._new_state(self._alloc_blocks(), params, version)
        elif state.version != version:
            self._bind_state(state, params, version)
        self._local.state = state
        return state

    def _replace_params(self, changed: Mapping[str, np.ndarray]) -> None:
        with self._lock:
            params = dict(self._params)
            params.update(changed)
            self._params = params
            self._unset_params = self._unset_params - set(changed)
            self._version += 1

    # -- binding ----------------------------------------------------------------------------
    def _readonly(self, value: Any, name: str) -> np.ndarray:
        spec = self.plan.entries[self._param_entry[name]]
        arr = _as_array(value, "parameter", name, spec)
        if arr.shape != spec.shape or arr.dtype.name != spec.dtype:
            raise ExecutorUsageError(
                f"parameter {name!r} must be {_type_str(spec)}, got "
                f"{arr.dtype.name}{list(arr.shape)}: pass the array relay.build returned for it"
            )
        view = np.asarray(arr, order="C").view()
        view.flags.writeable = False
        return view

    def _make_views(
        self, own: list[np.ndarray | None], params: Mapping[str, np.ndarray]
    ) -> list[np.ndarray]:
        """Every entry as a view of its storage (a parameter's storage is the parameter)."""
        plan = self.plan
        blocks = list(own)
        param_views: dict[int, np.ndarray] = {}
        for name, e in self._param_entry.items():
            arr = params[name]
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
        return views

    def _bind_state(
        self, state: _ThreadState, params: Mapping[str, np.ndarray], version: int
    ) -> None:
        views = self._make_views(state.blocks, params)
        with host_native.chosen(self._native):
            state.steps, state.step_nodes = self._bind_steps(views, Scratch(state.arena), False)
        state.views = views
        state.inputs = [views[e] for e in self._input_entries]
        state.version = version

    def _bind_steps(
        self, views: list[np.ndarray], scratch: Scratch, dry_run: bool
    ) -> tuple[list[Callable[[], Any]], list[int]]:
        steps: list[Callable[[], Any]] = []
        step_nodes: list[int] = []
        fused: set[int] = set()
        for index, node in enumerate(self.plan.nodes):
            if node.kind in ("input", "param") or (node.kind == "op" and node.view):
                continue
            if index in fused:
                continue
            ins = [views[e] for e in node.inputs]
            outs = [views[e] for e in node.outputs]
            if node.kind == "op":
                scratch.reset()
                group = self._fusion.get(index)
                try:
                    run = None
                    if group is not None:
                        run = fusion.bind_group(group, self.plan, views, scratch)
                        if run is not None:
                            fused.update(group.members)
                            self._fused_names[index] = group.names
                        else:
                            scratch.reset()
                    if run is None:
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
                run = _parked(self.lib.bind_function(node.name, ins, outs))
            steps.append(run)
            step_nodes.append(index)
        return steps, step_nodes

    def _step_error(self, state: _ThreadState, i: int, err: Exception) -> ExecutionError:
        """``err`` raised by step ``i``, with the step's context."""
        node = self.plan.nodes[state.step_nodes[i]]
        detail = str(err) if isinstance(err, RelayKitError) else f"{type(err).__name__}: {err}"
        if node.kind == "extern":
            return BackendExecutionError(
                f"error in function {node.name} of backend {node.compiler!r} "
                f"(region ops: {', '.join(node.region_ops) or 'none'}): {detail}"
            )
        names = self._fused_names.get(state.step_nodes[i])
        fused = f" (fused with {', '.join(names)})" if names else ""
        return ExecutionError(f"while running {node.desc or node.name}{fused}: {detail}")

    # -- TVM's graph executor interface ---------------------------------------------------------
    def set_input_zero_copy(self, key: Any, value: Any) -> None:
        """TVM's ``set_input_zero_copy(index_or_name, array)``: set one input, with the same
        checks and results as :meth:`set_input`.

        TVM makes the caller's array the input's buffer; a relaykit executor owns its buffers
        (so that any number of executors and threads run at once), so the array is copied in
        once: changing it afterwards does not change the next run's input.
        """
        self.set_input(key, value)

    def set_input(self, key: Any = None, value: Any = None, **params: Any) -> None:
        """Set an input by name or index; keyword arguments set several at once.

        Every value is checked (shape, and a dtype that converts without changing kind)
        before any is copied. Names of parameters bound at build time (now constants) are
        ignored, as in TVM; a parameter ``p<k>`` can be replaced by name.
        """
        state = getattr(self._local, "state", None)
        if state is None or state.version != self._version:
            state = self._refresh(state)
        if not params and type(key) is str and type(value) is np.ndarray:
            i = self._input_index.get(key)
            if i is not None:  # the common call: an array of the input's shape and dtype
                buf = state.inputs[i]
                if value.shape == buf.shape and value.dtype == buf.dtype:
                    np.copyto(buf, value)
                    state.unset.discard(i)
                    return
        copies: list[tuple[int, np.ndarray]] = []
        changed: dict[str, np.ndarray] = {}
        if key is not None:
            self._check_one(key, value, True, copies, changed)
        elif value is not None:
            raise ExecutorUsageError(
                "set_input got a value but no input: call set_input(name_or_index, value)"
            )
        for k, v in params.items():
            self._check_one(k, v, False, copies, changed)
        for i, arr in copies:
            np.copyto(state.inputs[i], arr, casting="unsafe")  # checked: converts_exactly
            state.unset.discard(i)
        if changed:
            self._replace_params(changed)

    def _input_position(self, key: Any) -> int | str:
        """An input index (checked) or a name, from ``key``."""
        if type(key) is str:
            return key
        if isinstance(key, str):
            return str(key)
        i: int | None = None
        if not isinstance(key, bool):
            with contextlib.suppress(TypeError):  # an array of several elements has __index__
                i = operator.index(key)
        if i is None:
            raise ExecutorUsageError(
                f"an input is named by a string or an int index, got {type(key).__name__} "
                f"{key!r}; the inputs are: {', '.join(self._input_names) or 'none'}"
            )
        if not 0 <= i < len(self._input_entries):
            raise ExecutorUsageError(
                f"input index {i} out of range ({len(self._input_entries)} inputs: "
                f"{', '.join(self._input_names) or 'none'})"
            )
        return i

    def _check_one(
        self,
        key: Any,
        value: Any,
        strict: bool,
        copies: list[tuple[int, np.ndarray]],
        changed: dict[str, np.ndarray],
    ) -> None:
        """Check one input (appended to ``copies``) or parameter (to ``changed``)."""
        pos = self._input_position(key)
        name = self._input_names[pos] if isinstance(pos, int) else pos
        i = pos if isinstance(pos, int) else self._input_index.get(name)
        if i is not None:
            spec = self.plan.entries[self._input_entries[i]]
            arr = _as_array(value, "input", name, spec)
            if arr.shape != spec.shape:
                raise ExecutorUsageError(
                    f"input {name!r} expects {_type_str(spec)}, got an array of shape "
                    f"{list(arr.shape)} ({arr.dtype}): pass an array of that shape (the "
                    "model was built for it)"
                )
            want = self._input_dtypes[i]
            if arr.dtype != want and not converts_exactly(arr, want):
                raise ExecutorUsageError(
                    f"input {name!r} expects {_type_str(spec)}, got {arr.dtype}: convert it "
                    f"with .astype({spec.dtype!r}) if that is what you mean"
                )
            copies.append((i, arr))
        elif name in self._param_names:
            changed[name] = self._readonly(value, name)
        elif strict or name not in self._bound:
            known = ", ".join(self._input_names) or "none"
            raise ExecutorUsageError(f"the graph has no input {name!r}; its inputs are: {known}")

    def load_params(self, params: Mapping[str, Any] | bytes | bytearray) -> None:
        """Set the parameters ``p0``, ``p1``... from a dict, or from the bytes
        ``tvm.runtime.save_param_dict`` returned (as TVM loads them)."""
        if isinstance(params, (bytes, bytearray)):
            try:
                params = load_param_dict(params)
            except ArtifactCorruptError as err:
                raise ExecutorUsageError(
                    f"load_params takes a dict of parameter arrays (lib.get_params()) or the "
                    f"bytes tvm.runtime.save_param_dict returned: {err}"
                ) from None
        if not isinstance(params, Mapping):
            raise ExecutorUsageError(
                f"load_params takes a dict of parameter arrays (lib.get_params()), got "
                f"{type(params).__name__}"
            )
        changed = {
            name: self._readonly(value, name)
            for name, value in params.items()
            if name in self._param_names
        }
        if changed:
            self._replace_params(changed)

    def run(self, **inputs: Any) -> None:
        """Run the graph (after setting ``inputs``, if given); every input must be set."""
        if inputs:
            self.set_input(**inputs)
        state = getattr(self._local, "state", None)
        if state is None or state.version != self._version:
            state = self._refresh(state)
        if (state.unset and not state.unset.isdisjoint(self._read_inputs)) or self._unset_params:
            raise self._unset_error(state)
        i = 0
        try:
            with np.errstate(all="ignore"):
                for i, step in enumerate(state.steps):  # noqa: B007 - read in the handler
                    step()
        except Exception as err:
            state.ran = False  # the outputs are partial
            raise self._step_error(state, i, err) from err
        except BaseException:  # KeyboardInterrupt...
            state.ran = False
            raise
        state.ran = True
        self._monitor.tick()  # one reading per run: what a busy machine did (bench)

    def _unset_error(self, state: _ThreadState) -> ExecutorUsageError:
        missing_inputs = sorted(state.unset & self._read_inputs)
        if missing_inputs:
            names = [self._input_names[i] for i in missing_inputs]
            spec = self.plan.entries[self._input_entries[missing_inputs[0]]]
            hint = (
                f"set_input({missing_inputs[0]}, value) (several inputs are named {names[0]!r})"
                if self._input_names.count(names[0]) > 1
                else f"set_input({names[0]!r}, value) or run({names[0]}=value)"
            )
            others = f" (also not set: {', '.join(names[1:])})" if len(names) > 1 else ""
            note = "" if state.first else _THREAD_NOTE
            return ExecutorUsageError(
                f"run() before input {names[0]!r} ({_type_str(spec)}) was set{others}: call "
                f"{hint} first{note}"
            )
        missing = sorted(self._unset_params)
        return ExecutorUsageError(
            f"run() before parameter {missing[0]!r} was set ({len(missing)} not set): call "
            "set_input(**params) or load_params(params) with the build's parameters "
            "(lib.get_params()) first"
        )

    def get_num_outputs(self) -> int:
        return len(self.plan.heads)

    def get_num_inputs(self) -> int:
        return len(self._input_entries)

    def _index_of(self, name: Any) -> int:
        if not isinstance(name, str) or name not in self._input_index:
            known = ", ".join(self._input_names) or "none"
            raise ExecutorUsageError(f"the graph has no input {name!r}; its inputs are: {known}")
        return self._input_index[name]

    def get_input_index(self, name: str) -> int:
        """The index of input ``name``, or -1 when the graph has no such input (TVM's
        answer); a name that is not a string is an error."""
        if isinstance(name, str) and name not in self._input_index:
            return -1
        return self._index_of(name)

    def get_input(self, index: int | str, out: Any = None) -> NDArray:
        """This thread's input buffer (by index or name), or a copy into ``out``."""
        pos = self._input_position(index)
        i = self._index_of(pos) if isinstance(pos, str) else pos
        buf = self._state().inputs[i]
        if out is not None:
            return out.copyfrom(buf) if isinstance(out, NDArray) else NDArray(buf.copy())
        return NDArray(buf, self.device)

    def get_output(self, index: int, out: Any = None) -> NDArray:
        """Output ``index`` of this thread's last run, as a new array (or copied into
        ``out``, a ``tvm.nd.NDArray`` of the output's shape)."""
        n = len(self.plan.heads)
        if type(index) is not int and (isinstance(index, bool) or not hasattr(index, "__index__")):
            raise ExecutorUsageError(
                f"get_output takes an output index, an int from 0 to {n - 1}, got "
                f"{type(index).__name__} {index!r} (a graph executor's outputs have no names)"
            )
        i = operator.index(index)
        if not 0 <= i < n:
            raise ExecutorUsageError(
                f"output index {i} out of range ({n} outputs): use 0 to {n - 1}"
            )
        state = getattr(self._local, "state", None)
        if state is None or state.version != self._version:
            state = self._refresh(state)
        if not state.ran:
            note = "" if state.first else _THREAD_NOTE
            raise ExecutorUsageError(
                f"get_output({i}) before a completed run(): call run() first{note}"
            )
        value = state.views[self.plan.heads[i]]
        if out is not None:
            if not isinstance(out, NDArray) or out.shape != value.shape:
                raise ExecutorUsageError(
                    f"get_output({i}, out) needs out to be a tvm.nd.NDArray of shape "
                    f"{list(value.shape)}, got {_describe(out)}"
                )
            return out.copyfrom(value)
        return NDArray(np.array(value, copy=True), self.device)

    # -- introspection ----------------------------------------------------------------------
    @property
    def num_steps(self) -> int:
        return self._num_steps

    def memory_report(self) -> MemoryReport:
        """Intermediate memory with and without the plan (see :class:`MemoryReport`)."""
        return memory_report(self.plan, self.workspace_bytes)

    # -- module functions -------------------------------------------------------------------
    def function_names(self) -> list[str]:
        return list(_EXPORTED)

    def _own_function(self, name: str) -> Callable[..., Any] | None:
        return getattr(self, name) if name in _EXPORTED else None
