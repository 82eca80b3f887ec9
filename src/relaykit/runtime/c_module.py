"""The runtime module of C-source backends: a compiled shared library called with ctypes.

Every generated function has one C signature, ``int32_t f(void **args)``, with
``args`` = the inputs, the outputs, the constants, then a workspace pointer. The
module keeps the constants as arrays (never as C literals), the generated
source (for inspection and export) and the library bytes; it loads the
library on first use, after checking its SHA-256. A function that returns
non-zero has its message read from the library's ``relaykit_last_error()``.

>>> spec = TensorSpec((2, 3), "float32")
>>> TensorSpec.from_json(spec.to_json()) == spec
True
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from relaykit.errors import BackendExecutionError, ExecutionError, NativeCodeRefusedError

from .module import Module, ModuleBlob, register_module_loader
from .shared_library import load_library_bytes, sha256_hex

__all__ = ["TensorSpec", "CFunctionSignature", "CSourceModule", "array_caller", "check_arrays"]

_ERROR_SYMBOL = "relaykit_last_error"


@dataclass(frozen=True)
class TensorSpec:
    """The static shape and dtype of one argument."""

    shape: tuple[int, ...]
    dtype: str

    def to_json(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype}

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> TensorSpec:
        return TensorSpec(tuple(int(d) for d in obj["shape"]), str(obj["dtype"]))

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


def check_arrays(
    values: Sequence[Any], specs: Sequence[TensorSpec], what: str, owner: str
) -> list[np.ndarray]:
    """``values`` as C-contiguous arrays matching ``specs`` exactly (``what``: "input")."""
    if len(values) != len(specs):
        raise ExecutionError(f"{owner} takes {len(specs)} {what}s, got {len(values)}")
    out = []
    for i, (v, s) in enumerate(zip(values, specs, strict=True)):
        arr = v.numpy() if hasattr(v, "numpy") and not isinstance(v, np.ndarray) else v
        if not isinstance(arr, np.ndarray):
            raise ExecutionError(f"{what} {i} of {owner} must be an array, got {type(v).__name__}")
        if arr.shape != s.shape or arr.dtype.name != s.dtype:
            raise ExecutionError(
                f"{what} {i} of {owner} must be {s.dtype}{list(s.shape)}, "
                f"got {arr.dtype.name}{list(arr.shape)}"
            )
        if not arr.flags.c_contiguous or (what == "output" and not arr.flags.writeable):
            raise ExecutionError(f"{what} {i} of {owner} must be a C-contiguous writeable array")
        out.append(arr)
    return out


def array_caller(
    module: Any, name: str, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec]
) -> Callable[..., Any]:
    """``f(*inputs)`` returning new outputs, or ``f(*inputs, *outputs)`` filling given
    ones: the Python face of a runtime module's bound function ``name``."""

    def call(*arrays: Any) -> Any:
        n_in = len(inputs)
        ins = check_arrays(arrays[:n_in], inputs, "input", f"function {name}")
        if len(arrays) == n_in:
            outs = [np.empty(s.shape, s.dtype) for s in outputs]
            module.bind_function(name, ins, outs)()
            return outs[0] if len(outs) == 1 else tuple(outs)
        outs = check_arrays(arrays[n_in:], outputs, "output", f"function {name}")
        module.bind_function(name, ins, outs)()
        return None

    return call


@dataclass(frozen=True)
class CFunctionSignature:
    """One generated function: its Relay symbol, C name, arguments and workspace."""

    symbol: str
    c_name: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    constants: tuple[str, ...] = ()
    workspace_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "symbol": self.symbol,
            "c_name": self.c_name,
            "inputs": [s.to_json() for s in self.inputs],
            "outputs": [s.to_json() for s in self.outputs],
            "constants": list(self.constants),
            "workspace_bytes": self.workspace_bytes,
        }

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> CFunctionSignature:
        return CFunctionSignature(
            str(obj["symbol"]),
            str(obj["c_name"]),
            tuple(TensorSpec.from_json(s) for s in obj["inputs"]),
            tuple(TensorSpec.from_json(s) for s in obj["outputs"]),
            tuple(str(c) for c in obj["constants"]),
            int(obj["workspace_bytes"]),
        )


class CSourceModule(Module):
    """Generated C, its compiled library, and the constants its functions read."""

    type_key: ClassVar[str] = "c_source"

    def __init__(
        self,
        target: str,
        source: str,
        library: bytes,
        signatures: Sequence[CFunctionSignature],
        constants: Mapping[str, np.ndarray],
        library_sha256: str | None = None,
    ) -> None:
        super().__init__()
        self.target = target
        self.source = source
        self.library = library
        self.library_sha256 = library_sha256 or sha256_hex(library)
        self.signatures = {s.symbol: s for s in signatures}
        self.constants = {k: np.asarray(v, order="C") for k, v in constants.items()}
        self._lib: ctypes.CDLL | None = None

    # -- loading ----------------------------------------------------------------------------
    def _handle(self) -> ctypes.CDLL:
        if self._lib is None:
            self._lib = load_library_bytes(
                self.library, self.library_sha256, f"backend {self.target!r}"
            )
        return self._lib

    def _c_function(self, sig: CFunctionSignature) -> Any:
        fn = self._handle()[sig.c_name]  # not getattr: that would cache it on the library
        fn.argtypes = [ctypes.c_void_p]
        fn.restype = ctypes.c_int32
        return fn

    def last_error(self) -> str:
        try:
            getter = self._handle()[_ERROR_SYMBOL]
        except AttributeError:
            return "no message (the library has no relaykit_last_error)"
        getter.restype = ctypes.c_char_p
        msg = getter()
        return msg.decode("utf-8", "replace") if msg else "no message"

    # -- functions --------------------------------------------------------------------------
    def function_names(self) -> list[str]:
        return sorted(self.signatures)

    def _own_function(self, name: str) -> Callable[..., Any] | None:
        sig = self.signatures.get(name)
        if sig is None:
            return None

        return array_caller(self, name, sig.inputs, sig.outputs)

    def bind_function(
        self, name: str, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]
    ) -> Callable[[], Any]:
        sig = self.signatures.get(name)
        if sig is None:
            return super().bind_function(name, inputs, outputs)
        owner = f"function {name}"
        ins = check_arrays(inputs, sig.inputs, "input", owner)
        outs = check_arrays(outputs, sig.outputs, "output", owner)
        consts = [self.constants[c] for c in sig.constants]
        # Every binding (one per call site of each executor) has its own workspace, so
        # executors running in parallel never share intermediate buffers.
        ws = np.zeros(max(sig.workspace_bytes, 1), np.uint8)
        keep = [*ins, *outs, *consts, ws]
        ptrs = (ctypes.c_void_p * len(keep))(*[a.ctypes.data for a in keep])
        fn = self._c_function(sig)
        target = self.target

        def run() -> None:
            if fn(ptrs) != 0:
                raise BackendExecutionError(
                    f"backend {target!r} function {name} failed: {self.last_error()}"
                )

        run.keep_alive = keep  # type: ignore[attr-defined]
        return run

    # -- saving -----------------------------------------------------------------------------
    def save_blob(self) -> ModuleBlob:
        return ModuleBlob(
            self.type_key,
            meta={
                "target": self.target,
                "signatures": [s.to_json() for s in self.signatures.values()],
                "library_sha256": self.library_sha256,
                "native": True,
            },
            files={"source.c": self.source.encode(), "library.so": self.library},
            arrays=dict(self.constants),
            provider=__name__,
        )

    @staticmethod
    def load_blob(blob: ModuleBlob) -> CSourceModule:
        meta = blob.meta
        if not blob.allow_native:  # a bare library: nothing to rebuild it from
            raise NativeCodeRefusedError(
                f"the file holds a compiled library of backend {str(meta.get('target'))!r} "
                "without the graph it was generated from, so relaykit cannot rebuild it; native "
                "code from the file was refused (allow_native=False). Load with "
                "allow_native=True only if you trust the file's origin (see docs/artifacts.md)"
            )
        return CSourceModule(
            str(meta["target"]),
            blob.files["source.c"].decode("utf-8"),
            blob.files["library.so"],
            [CFunctionSignature.from_json(s) for s in meta["signatures"]],
            blob.arrays,
            library_sha256=str(meta["library_sha256"]),
        )

    def __repr__(self) -> str:
        return f"CSourceModule({self.target}, functions={self.function_names()})"


register_module_loader(CSourceModule.type_key, CSourceModule.load_blob)
