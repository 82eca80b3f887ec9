"""One compiled region: the native oneDNN engine of a region program, callable on arrays.

Creating a :class:`DnnlRegion` builds every oneDNN primitive of the region
once, reorders the weights into the layouts oneDNN chose and plans the
intermediate buffers; calling it runs the whole region in one native call
(the GIL is released meanwhile).

A region is immutable once built and is shared by everyone who runs it; the
memory a run writes (intermediate buffers, oneDNN's scratchpad, a stream) is
a *context*. :meth:`DnnlRegion.bind` gives each executor a context of its own,
so executors run one region in parallel threads without waiting for each
other; :meth:`DnnlRegion.run` takes a free context from a small pool (making
one when every context is busy), so concurrent callers of ``run`` never wait
either. A bound call used by two threads at once takes turns on its context.

>>> import numpy as np
>>> from relaykit.backends.dnnl.run.program import Node, Program
>>> p = Program()
>>> x = p.add_input((1, 4))
>>> y = p.new_tensor((1, 4))
>>> p.nodes.append(Node("eltwise", [x], y, {"alg": "relu"}))
>>> p.outputs.append(y)
>>> region = DnnlRegion.from_program(p, name="demo")          # doctest: +SKIP
>>> region(np.array([[-1, 2, -3, 4]], "float32"))  # doctest: +SKIP
array([[0., 2., 0., 4.]], dtype=float32)
"""

from __future__ import annotations

import ctypes
import json
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import BackendExecutionError, CodegenError

from .contention import Adaptive, adaptive_enabled
from .native import NativeRuntime, load_runtime
from .program import Program
from .threads import resolve_num_threads

__all__ = ["BoundRegion", "DnnlRegion", "SMALL_REGION_WORK", "region_work"]

#: A region doing less work than this (multiply-adds of its matrix products and
#: convolutions plus the elements every other step writes) runs on one thread. oneDNN
#: forks and joins its OpenMP team once per primitive; on 2 cores that costs ~10-30 µs
#: per primitive when the machine is idle and milliseconds when it is busy
#: (benchmarks/dnnl_overhead.py: a one-step region took 4.3 ms per call at 2 threads
#: and 14 µs at 1 on the shared 2-core test machine), while one core does ~10^6
#: multiply-adds in ~40 µs, so below that a second thread cannot pay for itself.
#: Inside a bigger region the native runtime applies the same reasoning per step: a step
#: under ~256k multiply-adds (or 16k elements for the other primitives) is built for and
#: runs on one thread (``threads=1`` in :meth:`DnnlRegion.steps`).
SMALL_REGION_WORK = 1_000_000


def region_work(doc: dict[str, Any]) -> int:
    """Rough work of a region program: multiply-adds of conv/dense/matmul nodes, and
    the elements every other node writes."""
    shapes = doc["tensors"]
    total = 0
    for node in doc["nodes"]:
        out = int(np.prod(shapes[node["out"]]))
        op = node["op"]
        if op == "conv":
            total += out * int(np.prod(shapes[node["weight"]][1:]))
        elif op == "dense":
            total += out * int(np.prod(shapes[node["in"][0]][1:]))
        elif op == "matmul":
            total += out * int(shapes[node["in"][0]][-1])
        else:
            total += out
    return total


class DnnlRegion:
    """A region program compiled into oneDNN primitives (see the module docstring)."""

    def __init__(
        self,
        program_json: str,
        constants: Sequence[np.ndarray],
        name: str = "region",
        num_threads: int | None = None,
        runtime: NativeRuntime | None = None,
        ops: Sequence[str] = (),
    ) -> None:
        self.name = name
        self.program_json = program_json
        self.ops = list(ops)
        try:
            doc = json.loads(program_json)
            shapes = [tuple(int(d) for d in s) for s in doc["tensors"]]
            self.input_shapes = [shapes[t] for t in doc["inputs"]]
            self.output_shapes = [shapes[t] for t in doc["outputs"]]
            dtypes = doc.get("dtypes") or ["float32"] * len(shapes)
            #: Data types of the inputs and outputs (float32 but at int8 region borders).
            self.input_dtypes = [np.dtype(dtypes[t]) for t in doc["inputs"]]
            self.output_dtypes = [np.dtype(dtypes[t]) for t in doc["outputs"]]
            const_shapes = [shapes[t] for t in doc["constants"]]
            #: The activation layout the region was built with ("nhwc", "blocked", "any").
            self.layout = str(doc.get("layout", "any"))
            work = region_work(doc)
        except (ValueError, KeyError, TypeError, IndexError) as err:
            raise CodegenError(f"dnnl region {name!r}: malformed program ({err})") from None
        #: Threads oneDNN uses for this region: one for small regions (see
        #: :data:`SMALL_REGION_WORK`), else the count asked for (or the default policy).
        requested = resolve_num_threads(num_threads)
        self.num_threads = 1 if work < SMALL_REGION_WORK else requested
        self.constants = [np.ascontiguousarray(c, dtype=np.float32) for c in constants]
        if [c.shape for c in self.constants] != const_shapes:
            raise CodegenError(f"dnnl region {name!r}: constants do not match the program")
        self._runtime = runtime if runtime is not None else load_runtime()
        dll = self._runtime.dll
        cptrs = (ctypes.c_void_p * max(1, len(self.constants)))(
            *[c.ctypes.data for c in self.constants]
        )
        handle = dll.rkdnnl_create(
            program_json.encode(), cptrs, len(self.constants), self.num_threads
        )
        if not handle:
            raise CodegenError(
                f"the dnnl backend could not build region {name!r}: {self._runtime.last_error()}"
            )
        self._handle: int | None = handle
        self._run = dll.rkdnnl_run
        self._n_in = len(self.input_shapes)
        self._n_out = len(self.output_shapes)
        # Free contexts for run() (each call takes one, so concurrent calls never share).
        self._pool: list[int] = []
        self._pool_lock = threading.Lock()
        self._twin: DnnlRegion | None = None

    def _new_context(self) -> int:
        ctx = self._runtime.dll.rkdnnl_context_create(self._handle)
        if not ctx:
            raise BackendExecutionError(
                f"dnnl region {self.name!r}: cannot allocate its buffers "
                f"({self.arena_bytes} bytes): {self._runtime.last_error()}"
            )
        return int(ctx)

    def _take_context(self) -> int:
        with self._pool_lock:
            if self._pool:
                return self._pool.pop()
        return self._new_context()

    def _give_back(self, ctx: int) -> None:
        with self._pool_lock:
            self._pool.append(ctx)

    @classmethod
    def from_program(cls, program: Program, name: str = "region", **kwargs: Any) -> DnnlRegion:
        """Compile a :class:`~.program.Program` (see :meth:`__init__` for ``kwargs``)."""
        return cls(program.to_json(), program.constant_arrays(), name=name, **kwargs)

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle:
            dll = self._runtime.dll
            for ctx in getattr(self, "_pool", ()):
                dll.rkdnnl_context_destroy(ctx)
            self._pool = []
            dll.rkdnnl_destroy(handle)
            self._handle = None

    # -- running ---------------------------------------------------------------------

    def _check_inputs(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        if len(inputs) != self._n_in:
            raise BackendExecutionError(
                f"dnnl region {self.name!r} takes {self._n_in} inputs, got {len(inputs)}"
            )
        arrays = []
        for k, (x, shape, dtype) in enumerate(
            zip(inputs, self.input_shapes, self.input_dtypes, strict=True)
        ):
            a = np.asarray(x)
            if a.dtype != dtype or not a.flags.c_contiguous:
                a = np.ascontiguousarray(a, dtype=dtype)
            if a.shape != shape:
                raise BackendExecutionError(
                    f"input {k} of dnnl region {self.name!r} has shape {a.shape}, expected {shape}"
                )
            arrays.append(a)
        return arrays

    def _alloc_outputs(self, out: Sequence[np.ndarray] | None) -> list[np.ndarray]:
        if out is None:
            return [
                np.empty(s, dtype=d)
                for s, d in zip(self.output_shapes, self.output_dtypes, strict=True)
            ]
        outs = list(out)
        for k, (o, shape, dtype) in enumerate(
            zip(outs, self.output_shapes, self.output_dtypes, strict=True)
        ):
            if o.dtype != dtype or o.shape != shape or not o.flags.c_contiguous:
                raise BackendExecutionError(
                    f"output buffer {k} of dnnl region {self.name!r} must be a C-contiguous "
                    f"{dtype} array of shape {shape}"
                )
        return outs

    def run(
        self, inputs: Sequence[Any], out: Sequence[np.ndarray] | None = None
    ) -> list[np.ndarray]:
        """Run the region on ``inputs``; write into ``out`` (or new arrays) and return them."""
        arrays = self._check_inputs(inputs)
        outs = self._alloc_outputs(out)
        ins = (ctypes.c_void_p * max(1, self._n_in))(*[a.ctypes.data for a in arrays])
        ots = (ctypes.c_void_p * max(1, self._n_out))(*[o.ctypes.data for o in outs])
        ctx = self._take_context()
        try:
            failed = self._run(self._handle, ctx, ins, ots) != 0
            error = self._runtime.last_error() if failed else ""
        finally:
            self._give_back(ctx)
        if failed:
            raise BackendExecutionError(
                f"dnnl region {self.name!r} failed: {error}"
                + (f" (ops: {', '.join(self.ops)})" if self.ops else "")
            )
        return outs

    def serial_twin(self) -> DnnlRegion:
        """The same program built for one thread (made on first use, then kept): what a
        bound region runs while other processes hold the cores (:mod:`.contention`).
        It holds its own copy of the reordered weights."""
        if self.num_threads == 1:
            return self
        with self._pool_lock:
            if self._twin is None:
                self._twin = DnnlRegion(
                    self.program_json, self.constants, name=self.name, num_threads=1,
                    runtime=self._runtime, ops=self.ops,
                )  # fmt: skip
            return self._twin

    def bind(
        self,
        inputs: Sequence[np.ndarray],
        outputs: Sequence[np.ndarray],
        adaptive: bool | None = None,
    ) -> BoundRegion:
        """A no-argument callable running the region on these fixed arrays, in a context
        of its own (the pointers are prepared once, so a call costs one native call).
        ``adaptive``: run on one thread while other processes hold the cores
        (:mod:`.contention`; None: on unless ``RELAYKIT_DNNL_ADAPTIVE=0``)."""
        if adaptive is None:
            adaptive = adaptive_enabled()
        arrays = self._check_inputs(inputs)
        if any(a is not b for a, b in zip(arrays, inputs, strict=True)):
            raise BackendExecutionError(
                f"dnnl region {self.name!r} binds to C-contiguous input arrays of its data "
                "types only"
            )
        outs = self._alloc_outputs(outputs)
        return BoundRegion(self, arrays, outs, adaptive)

    def __call__(self, *inputs: Any) -> Any:
        """``region(x, ...)``: one array, or a tuple when the region has several outputs."""
        outs = self.run(inputs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    # -- introspection ---------------------------------------------------------------

    def steps(self) -> list[str]:
        """One line per native step: primitive, layouts, fused post-ops, oneDNN kernel."""
        dll = self._runtime.dll
        n = dll.rkdnnl_num_steps(self._handle)
        return [dll.rkdnnl_step_info(self._handle, i).decode() for i in range(n)]

    def profile(self, inputs: Sequence[Any]) -> list[tuple[str, float]]:
        """Run once, timing every step: ``[(step description, milliseconds), ...]``."""
        arrays = self._check_inputs(inputs)
        outs = self._alloc_outputs(None)
        dll = self._runtime.dll
        n = dll.rkdnnl_num_steps(self._handle)
        times = (ctypes.c_double * max(1, n))()
        ins = (ctypes.c_void_p * max(1, self._n_in))(*[a.ctypes.data for a in arrays])
        ots = (ctypes.c_void_p * max(1, self._n_out))(*[o.ctypes.data for o in outs])
        ctx = self._take_context()
        try:
            failed = dll.rkdnnl_profile(self._handle, ctx, ins, ots, times) != 0
            error = self._runtime.last_error() if failed else ""
        finally:
            self._give_back(ctx)
        if failed:
            raise BackendExecutionError(f"dnnl region {self.name!r} failed: {error}")
        return list(zip(self.steps(), list(times)[:n], strict=True))

    @property
    def arena_bytes(self) -> int:
        """Bytes of the region's intermediate buffers and scratchpad."""
        return int(self._runtime.dll.rkdnnl_arena_bytes(self._handle))

    def __repr__(self) -> str:
        return (
            f"<DnnlRegion {self.name} inputs={self.input_shapes} outputs={self.output_shapes} "
            f"layout={self.layout} threads={self.num_threads}>"
        )


class BoundRegion:
    """A region bound to fixed input and output arrays, with its own context (buffers,
    scratchpad, stream): what one executor calls. Two threads calling the same bound
    region take turns; different bound regions of one region run in parallel."""

    __slots__ = ("_adapt", "_ctx", "_ins", "_keep", "_lock", "_ots", "_region", "_run", "_twin")

    def __init__(
        self,
        region: DnnlRegion,
        inputs: Sequence[np.ndarray],
        outputs: Sequence[np.ndarray],
        adaptive: bool = True,
    ) -> None:
        self._region = region
        self._keep = (list(inputs), list(outputs))
        self._ins = (ctypes.c_void_p * max(1, len(inputs)))(*[a.ctypes.data for a in inputs])
        self._ots = (ctypes.c_void_p * max(1, len(outputs)))(*[o.ctypes.data for o in outputs])
        self._ctx = region._new_context()
        self._run = region._run
        self._lock = threading.Lock()
        #: Serial runs under contention (None: a one-thread region, or not asked for).
        self._adapt = Adaptive(region.num_threads) if adaptive and region.num_threads > 1 else None
        self._twin: BoundRegion | None = None

    def _native(self) -> None:
        region = self._region
        if self._run(region._handle, self._ctx, self._ins, self._ots) != 0:
            raise BackendExecutionError(
                f"dnnl region {region.name!r} failed: {region._runtime.last_error()}"
            )

    def _serial(self) -> None:
        """Run the region's serial twin on the same arrays (bound on first use)."""
        if self._twin is None:
            ins, outs = self._keep
            self._twin = self._region.serial_twin().bind(ins, outs, adaptive=False)
        self._twin._native()

    def __call__(self) -> None:
        with self._lock:
            if self._adapt is None:
                self._native()
            else:
                self._adapt.run(self._native, self._serial)

    @property
    def serial(self) -> bool:
        """Whether calls run on one thread now (other processes hold the cores)."""
        return self._adapt is not None and self._adapt.serial

    def __del__(self) -> None:
        ctx = getattr(self, "_ctx", None)
        if ctx:
            self._region._runtime.dll.rkdnnl_context_destroy(ctx)
            self._ctx = 0
