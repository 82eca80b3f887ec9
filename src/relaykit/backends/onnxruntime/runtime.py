"""The ``onnxruntime`` runtime module: one ONNX model and one ``InferenceSession`` per region.

The session is created once, on first use, with ``intra_op_num_threads`` from
relaykit's thread budget (:func:`relaykit.runtime.threads.resolve_num_threads`),
and shared by every executor and thread: ``InferenceSession.run`` is
thread-safe. Each call site binds the executor's own input and output arrays
once (an ``IOBinding`` over them, no copies), so executors running in parallel
threads never share a buffer. The saved form is the model's bytes and the
argument specs: data, not code, so an artifact loads with ``allow_native=False``.

The session's worker threads block when idle instead of spinning (onnxruntime's
default): a region runs between host kernels and other backends' regions, and a pool
still spinning after its run holds the cores the next step needs (on a shared 2-core
machine a placement alternating onnxruntime and oneDNN regions ran 30x slower at the
median with spinning on). ``RELAYKIT_ONNXRUNTIME_SPINNING=1`` turns spinning back on.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from relaykit.errors import ArtifactCorruptError, BackendExecutionError, MissingDependencyError
from relaykit.runtime.c_module import TensorSpec, array_caller, check_arrays
from relaykit.runtime.module import Module, ModuleBlob
from relaykit.runtime.threads import resolve_num_threads

__all__ = [
    "OnnxRuntimeModule",
    "SPINNING_ENV",
    "import_onnxruntime",
    "onnxruntime_version",
    "spinning",
]


def import_onnxruntime() -> Any:
    """The ``onnxruntime`` package, or a clear error naming the extra to install."""
    try:
        import onnxruntime
    except ImportError as err:
        raise MissingDependencyError(
            "the onnxruntime backend needs onnxruntime: pip install 'relaykit[onnxruntime]'"
        ) from err
    return onnxruntime


def onnxruntime_version() -> str:
    """The installed onnxruntime's version ("" when it is missing)."""
    try:
        return importlib.metadata.version("onnxruntime")
    except importlib.metadata.PackageNotFoundError:
        return ""


#: Set to 1 to let idle onnxruntime worker threads spin (see the module docstring).
SPINNING_ENV = "RELAYKIT_ONNXRUNTIME_SPINNING"


def spinning() -> bool:
    """Whether new sessions let idle worker threads spin (``RELAYKIT_ONNXRUNTIME_SPINNING=1``)."""
    return os.environ.get(SPINNING_ENV, "0").strip() not in ("", "0", "false", "no")


class OnnxRuntimeModule(Module):
    """One region: ``symbol``, its ONNX model bytes, and its input and output specs."""

    type_key: ClassVar[str] = "onnxruntime_model"

    def __init__(
        self,
        symbol: str,
        model: bytes,
        inputs: Sequence[TensorSpec],
        outputs: Sequence[TensorSpec],
    ) -> None:
        super().__init__()
        self.symbol = symbol
        self.model = bytes(model)
        self.input_specs = list(inputs)
        self.output_specs = list(outputs)
        self._session: Any = None
        self._lock = threading.Lock()

    @property
    def session(self) -> Any:
        """The region's ``InferenceSession`` (created once, shared by all callers)."""
        if self._session is None:
            with self._lock:
                if self._session is None:
                    ort = import_onnxruntime()
                    opts = ort.SessionOptions()
                    opts.intra_op_num_threads = resolve_num_threads()
                    opts.inter_op_num_threads = 1
                    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                    opts.log_severity_level = 3
                    opts.add_session_config_entry(
                        "session.intra_op.allow_spinning", "1" if spinning() else "0"
                    )
                    try:
                        self._session = ort.InferenceSession(
                            self.model, opts, providers=["CPUExecutionProvider"]
                        )
                    except Exception as err:
                        raise BackendExecutionError(
                            f"onnxruntime could not load the model of {self.symbol}: {err}"
                        ) from err
        return self._session

    def function_names(self) -> list[str]:
        return [self.symbol]

    def _own_function(self, name: str) -> Callable[..., Any] | None:
        if name != self.symbol:
            return None
        return array_caller(self, name, self.input_specs, self.output_specs)

    def bind_function(
        self, name: str, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]
    ) -> Callable[[], Any]:
        if name != self.symbol:
            return super().bind_function(name, inputs, outputs)
        owner = f"function {name}"
        ins = check_arrays(inputs, self.input_specs, "input", owner)
        outs = check_arrays(outputs, self.output_specs, "output", owner)
        ort = import_onnxruntime()
        session = self.session
        binding = session.io_binding()
        for i, arr in enumerate(ins):
            binding.bind_ortvalue_input(f"in{i}", ort.OrtValue.ortvalue_from_numpy(arr))
        for i, arr in enumerate(outs):
            binding.bind_ortvalue_output(f"out{i}", ort.OrtValue.ortvalue_from_numpy(arr))
        lock = threading.Lock()  # one binding is one call site's: never two runs at once
        symbol = self.symbol

        def run() -> None:
            with lock:
                try:
                    session.run_with_iobinding(binding)
                except Exception as err:
                    raise BackendExecutionError(
                        f"onnxruntime region {symbol} failed: {type(err).__name__}: {err}"
                    ) from err

        return run

    def save_blob(self) -> ModuleBlob:
        return ModuleBlob(
            self.type_key,
            meta={
                "symbol": self.symbol,
                "inputs": [s.to_json() for s in self.input_specs],
                "outputs": [s.to_json() for s in self.output_specs],
            },
            files={"model.onnx": self.model},
            provider="relaykit.backends.onnxruntime.runtime",
        )

    @classmethod
    def load_blob(cls, blob: ModuleBlob) -> OnnxRuntimeModule:
        """Rebuild from a saved blob (the model is data: allowed with ``allow_native=False``)."""
        try:
            return cls(
                str(blob.meta["symbol"]),
                blob.files["model.onnx"],
                [TensorSpec.from_json(s) for s in blob.meta["inputs"]],
                [TensorSpec.from_json(s) for s in blob.meta["outputs"]],
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ArtifactCorruptError(f"a saved onnxruntime region is incomplete: {err}") from err

    def __repr__(self) -> str:
        return f"OnnxRuntimeModule({self.symbol}, {len(self.model)} bytes)"
