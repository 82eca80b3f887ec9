"""Exporting the modules of C-source codegens with their graph, and rebuilding them on load.

A :class:`GeneratedCModule` is what :class:`~relaykit.execution.codegen.CSourceCodegen`
builds. Its file record holds, besides the generated C and the compiled library,
the partitioned functions themselves: each in the Relay text format with its
constants lifted out into ``.npy`` arrays (so no weight is ever written as text).
Loading parses the functions, binds the constants back, and runs the backend's
own codegen on them; that gives the function signatures (argument shapes and
dtypes, constants, workspace size) and the C source from relaykit's emitters,
never from the file. Then:

- ``allow_native=False``: the regenerated C is compiled here (once per process
  and source) and the file's library is never written or loaded;
- ``allow_native=True``: the file's library is used, but only after the
  signatures it was built with matched the regenerated ones, so a tampered
  ``workspace_bytes`` or argument list is an error, never a wild pointer.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from relaykit.backends import find_backend
from relaykit.errors import ArtifactCorruptError, NativeCodeRefusedError, RelayKitError
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Constant, Expr, Function, Var
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.type_check import infer_function
from relaykit.ir.types import TensorType
from relaykit.runtime.c_module import CFunctionSignature, CSourceModule
from relaykit.runtime.module import ModuleBlob, register_module_loader
from relaykit.runtime.ndarray import NDArray
from relaykit.text import astext
from relaykit.text.parser import parse_expr
from relaykit.transform.bind import bind

from .toolchain import compile_shared_library

__all__ = ["GeneratedCModule", "CGenerator", "load_generated_c"]

_CONST = "rkc_"


@runtime_checkable
class CGenerator(Protocol):
    """What rebuilding needs of a codegen (:class:`~relaykit.execution.codegen.CSourceCodegen`)."""

    target: str
    cflags: tuple[str, ...]
    libs: tuple[str, ...]

    def generate_function(
        self, func: Function, symbol: str
    ) -> tuple[str, CFunctionSignature, dict[str, np.ndarray]]: ...

    def source(self, parts: Sequence[str]) -> str: ...


class GeneratedCModule(CSourceModule):
    """A :class:`CSourceModule` that knows the functions it was generated from."""

    type_key: ClassVar[str] = "c_generated"

    def __init__(
        self,
        target: str,
        source: str,
        library: bytes,
        signatures: Sequence[CFunctionSignature],
        constants: Mapping[str, np.ndarray],
        functions: Sequence[Function],
        library_sha256: str | None = None,
    ) -> None:
        super().__init__(target, source, library, signatures, constants, library_sha256)
        self.functions = list(functions)

    def save_blob(self) -> ModuleBlob:
        files = {"source.c": self.source.encode(), "library.so": self.library}
        arrays: dict[str, np.ndarray] = {}
        for i, fn in enumerate(self.functions):
            lifted = _lift_constants(fn, arrays, f"function{i}/")
            files[f"function{i}.relay"] = astext(lifted).encode()
        meta = {
            "target": self.target,
            "functions": len(self.functions),
            "signatures": [s.to_json() for s in self.signatures.values()],
            "library_sha256": self.library_sha256,
            "native": True,
        }
        return ModuleBlob(self.type_key, meta, files, arrays, provider=__name__)


def _lift_constants(fn: Function, arrays: dict[str, np.ndarray], prefix: str) -> Function:
    """``fn`` with each constant replaced by a free variable ``%rkc_<k>``, its value stored
    in ``arrays`` under ``<prefix>rkc_<k>`` (a constant used twice stays one variable)."""

    count = 0

    def post(new: Expr, old: Expr) -> Expr | None:
        nonlocal count
        if type(old) is not Constant:
            return None
        data = old.data.numpy()
        name = f"{_CONST}{count}"
        count += 1
        arrays[prefix + name] = data
        return Var(name, TensorType(data.shape, data.dtype.name))

    out = rewrite_post_order(fn, post)
    if not isinstance(out, Function):  # pragma: no cover - a function stays a function
        raise ArtifactCorruptError("lifting constants did not give a function")
    return out


# -- loading -----------------------------------------------------------------------------------


def _refuse(target: str, why: str) -> NativeCodeRefusedError:
    return NativeCodeRefusedError(
        f"the file's {target!r} module carries compiled native code, and relaykit cannot "
        f"rebuild it from its own sources: {why}. Native code from the file was refused "
        "(allow_native=False); load with allow_native=True only if you trust the file's "
        "origin (see docs/artifacts.md)"
    )


def _codegen(target: str, allow_native: bool) -> CGenerator:
    try:
        backend = find_backend(target)
    except RelayKitError as err:
        backend, why = None, str(err)
    else:
        why = f"no backend named {target!r} is registered or installed"
    codegen: Any = backend.codegen if backend is not None else None
    if isinstance(codegen, CGenerator):
        return codegen
    if backend is not None:
        why = f"backend {target!r} does not generate C"
    if not allow_native:
        raise _refuse(target, why)
    raise ArtifactCorruptError(
        f"cannot check the {target!r} module of the file against its graph: {why}. "
        "Install or register that backend before load_module"
    )


def _function(blob: ModuleBlob, i: int) -> Function:
    """Function ``i`` of the blob, parsed, its constants bound, type-checked."""
    text = blob.files.get(f"function{i}.relay")
    if text is None:
        raise ArtifactCorruptError(f"the C module's function {i} is missing")
    expr = parse_expr(text.decode("utf-8"), f"function{i}.relay")
    if not isinstance(expr, Function):
        raise ArtifactCorruptError(f"the C module's function {i} is not a function")
    prefix = f"function{i}/"
    binds: dict[Var, Any] = {}
    for name, arr in blob.arrays.items():
        if name.startswith(prefix):
            binds[Var(name[len(prefix) :])] = arr
    free = {v.name_hint: v for v in free_vars(expr)}
    if set(free) != {v.name_hint for v in binds}:
        raise ArtifactCorruptError(
            f"the C module's function {i} uses constants {sorted(free)} but the file holds "
            f"{sorted(v.name_hint for v in binds)}"
        )
    by_name = {v.name_hint: Constant(NDArray(arr)) for v, arr in binds.items()}
    bound = bind(expr, {v: by_name[n] for n, v in free.items()})
    if not isinstance(bound, Function):  # pragma: no cover
        raise ArtifactCorruptError(f"the C module's function {i} is not a function")
    return infer_function(bound)


_compiled: dict[str, bytes] = {}
_compiled_lock = threading.Lock()


def _compile(codegen: CGenerator, source: str, symbols: list[str]) -> bytes:
    """The library of relaykit-generated ``source``, compiled once per process."""
    key = hashlib.sha256("\0".join([source, *codegen.cflags, *codegen.libs]).encode()).hexdigest()
    with _compiled_lock:
        lib = _compiled.get(key)
    if lib is None:
        lib = compile_shared_library(source, codegen.target, symbols, codegen.cflags, codegen.libs)
        with _compiled_lock:
            _compiled[key] = lib
    return lib


def _check_signatures(target: str, carried: Any, regenerated: list[CFunctionSignature]) -> None:
    want = [s.to_json() for s in regenerated]
    if not isinstance(carried, list) or len(carried) != len(want):
        raise ArtifactCorruptError(
            f"the file's {target!r} module lists {len(carried) if isinstance(carried, list) else 0}"
            f" native function signatures, its graph gives {len(want)}; export the model again"
        )
    for got, exp in zip(carried, want, strict=True):
        if got != exp:
            diff = [k for k in exp if not isinstance(got, dict) or got.get(k) != exp[k]]
            raise ArtifactCorruptError(
                f"the file's {target!r} module records a signature for {exp['symbol']!r} that "
                f"differs from the one its graph gives (in {', '.join(diff)}: file "
                f"{[got.get(k) if isinstance(got, dict) else None for k in diff]}, graph "
                f"{[exp[k] for k in diff]}); its native library was not built from this graph. "
                "The file was changed, or written by another relaykit version: export it again"
            )


def load_generated_c(blob: ModuleBlob) -> GeneratedCModule:
    """Rebuild a :class:`GeneratedCModule` from its file record (see the module docstring)."""
    meta = blob.meta
    target = str(meta.get("target", ""))
    n = meta.get("functions")
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= len(blob.files):
        raise ArtifactCorruptError(f"the {target!r} module's function count {n!r} is invalid")
    if meta.get("native") is not True or "library.so" not in blob.files:
        raise ArtifactCorruptError(
            f"the {target!r} module records native={meta.get('native')!r} but a module of "
            "generated C always carries a compiled library; its record was changed after export"
        )
    codegen = _codegen(target, blob.allow_native)
    functions = [_function(blob, i) for i in range(n)]
    parts: list[str] = []
    sigs: list[CFunctionSignature] = []
    consts: dict[str, np.ndarray] = {}
    for fn in functions:
        symbol = fn.attrs.get("global_symbol") if fn.attrs else None
        if not isinstance(symbol, str) or not symbol:
            raise ArtifactCorruptError(f"a function of the {target!r} module has no global_symbol")
        text, sig, c = codegen.generate_function(fn, symbol)
        parts.append(text)
        sigs.append(sig)
        consts.update(c)
    _check_signatures(target, meta.get("signatures"), sigs)
    source = codegen.source(parts)
    if blob.allow_native:
        library, sha = blob.files.get("library.so", b""), str(meta.get("library_sha256", ""))
    else:
        library, sha = _compile(codegen, source, [s.symbol for s in sigs]), None
    return GeneratedCModule(target, source, library, sigs, consts, functions, library_sha256=sha)


register_module_loader(GeneratedCModule.type_key, load_generated_c)
