"""One compiled region: the native oneDNN engine of a region program, callable on arrays.

Creating a :class:`DnnlRegion` builds every oneDNN primitive of the region
once, reorders the weights into the layouts oneDNN chose and plans the
intermediate buffers; calling it runs the whole region in one native call
(the GIL is released meanwhile).

>>> import numpy as np
>>> from relaykit.contrib.dnnl.program import Node, Program
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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.errors import BackendExecutionError, CodegenError

from .native import NativeRuntime, load_runtime
from .program import Program
from .threads import resolve_num_threads

__all__ = ["DnnlRegion"]

_PtrArray = ctypes.c_void_p * 1


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
        self.num_threads = resolve_num_threads(num_threads)
        self.ops = list(ops)
        try:
            doc = json.loads(program_json)
            shapes = [tuple(int(d) for d in s) for s in doc["tensors"]]
            self.input_shapes = [shapes[t] for t in doc["inputs"]]
            self.output_shapes = [shapes[t] for t in doc["outputs"]]
            const_shapes = [shapes[t] for t in doc["constants"]]
            #: The activation layout the region was built with ("nhwc", "blocked", "any").
            self.layout = str(doc.get("layout", "any"))
        except (ValueError, KeyError, TypeError, IndexError) as err:
            raise CodegenError(f"dnnl region {name!r}: malformed program ({err})") from None
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
        # A region's buffers are its own: concurrent calls take turns.
        self._lock = threading.Lock()
        self._n_in = len(self.input_shapes)
        self._n_out = len(self.output_shapes)

    @classmethod
    def from_program(cls, program: Program, name: str = "region", **kwargs: Any) -> DnnlRegion:
        """Compile a :class:`~.program.Program` (see :meth:`__init__` for ``kwargs``)."""
        return cls(program.to_json(), program.constant_arrays(), name=name, **kwargs)

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle:
            self._runtime.dll.rkdnnl_destroy(handle)
            self._handle = None

    # -- running ---------------------------------------------------------------------

    def _check_inputs(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        if len(inputs) != self._n_in:
            raise BackendExecutionError(
                f"dnnl region {self.name!r} takes {self._n_in} inputs, got {len(inputs)}"
            )
        arrays = []
        for k, (x, shape) in enumerate(zip(inputs, self.input_shapes, strict=True)):
            a = np.asarray(x)
            if a.dtype != np.float32 or not a.flags.c_contiguous:
                a = np.ascontiguousarray(a, dtype=np.float32)
            if a.shape != shape:
                raise BackendExecutionError(
                    f"input {k} of dnnl region {self.name!r} has shape {a.shape}, expected {shape}"
                )
            arrays.append(a)
        return arrays

    def _alloc_outputs(self, out: Sequence[np.ndarray] | None) -> list[np.ndarray]:
        if out is None:
            return [np.empty(s, dtype=np.float32) for s in self.output_shapes]
        outs = list(out)
        for k, (o, shape) in enumerate(zip(outs, self.output_shapes, strict=True)):
            if o.dtype != np.float32 or o.shape != shape or not o.flags.c_contiguous:
                raise BackendExecutionError(
                    f"output buffer {k} of dnnl region {self.name!r} must be a C-contiguous "
                    f"float32 array of shape {shape}"
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
        with self._lock:
            failed = self._run(self._handle, ins, ots) != 0
            error = self._runtime.last_error() if failed else ""
        if failed:
            raise BackendExecutionError(
                f"dnnl region {self.name!r} failed: {error}"
                + (f" (ops: {', '.join(self.ops)})" if self.ops else "")
            )
        return outs

    def bind(
        self, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]
    ) -> Callable[[], None]:
        """A no-argument callable running the region on these fixed arrays (the pointers
        are prepared once, so a call costs one native call)."""
        arrays = self._check_inputs(inputs)
        if any(a is not b for a, b in zip(arrays, inputs, strict=True)):
            raise BackendExecutionError(
                f"dnnl region {self.name!r} binds to C-contiguous float32 input arrays only"
            )
        outs = self._alloc_outputs(outputs)
        ins = (ctypes.c_void_p * max(1, self._n_in))(*[a.ctypes.data for a in arrays])
        ots = (ctypes.c_void_p * max(1, self._n_out))(*[o.ctypes.data for o in outs])
        run, handle, lock, keep = self._run, self._handle, self._lock, (arrays, outs, self)

        def call() -> None:
            with lock:
                failed = run(handle, ins, ots) != 0
                error = keep[2]._runtime.last_error() if failed else ""
            if failed:
                raise BackendExecutionError(f"dnnl region {keep[2].name!r} failed: {error}")

        return call

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
        with self._lock:
            failed = dll.rkdnnl_profile(self._handle, ins, ots, times) != 0
            error = self._runtime.last_error() if failed else ""
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
