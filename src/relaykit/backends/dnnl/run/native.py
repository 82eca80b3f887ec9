"""The native region runtime: compiled once, cached, loaded with ctypes.

``native/*.cc`` (with ``native/*.h``: ``region.h`` declares what they share) is one
C++ library for every region of every model (the regions arrive as JSON programs).
The files are compiled as one translation unit (each header inlined once), with
``g++ -O3`` against the oneDNN wheel's headers the first time it is needed, into a
private cache directory keyed by that text, the oneDNN version and the compiler, and
loaded from there afterwards::

    ~/.cache/relaykit/dnnl/<key>/librkdnnl.so      (RELAYKIT_CACHE_DIR overrides ~/.cache/relaykit)

An exported model carries the compiled library and its source
(:func:`runtime_blob`); :func:`load_runtime_blob` reuses the cached library,
else the carried binary, else recompiles the carried source.

>>> lib = load_runtime()              # doctest: +SKIP
>>> lib.abi                           # doctest: +SKIP
'relaykit-dnnl-4 onednn-3.2.0'
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from relaykit.errors import CompileError, CompilerNotFoundError, NativeCodeRefusedError
from relaykit.runtime.native_build import (
    cache_dir,
    cache_key,
    compile_shared,
    find_compiler,
    private_dir,
)

from .library import INSTALL_HINT, find_onednn

__all__ = [
    "NativeRuntime",
    "load_runtime",
    "runtime_blob",
    "load_runtime_blob",
    "cache_dir",
    "SOURCE_DIR",
]

#: The runtime's sources: every ``*.cc`` in this directory and the headers they include.
SOURCE_DIR = Path(__file__).with_name("native")
#: The name the joined source is compiled (and keyed) under.
_SOURCE_NAME = "runtime.cc"
_LIB_NAME = "librkdnnl.so"
_FLAGS = ("-O3", "-std=c++17", "-fPIC", "-shared", "-fopenmp", "-DNDEBUG")
_lock = threading.Lock()


@dataclass(frozen=True)
class NativeRuntime:
    """The loaded runtime library with typed entry points."""

    path: Path
    dll: ctypes.CDLL

    @property
    def abi(self) -> str:
        return self.dll.rkdnnl_abi().decode()

    def last_error(self) -> str:
        return self.dll.rkdnnl_last_error().decode(errors="replace")


def _compiler() -> list[str]:
    return find_compiler("the dnnl backend's oneDNN runtime", ("CXX",), ("g++", "c++"), "C++")


#: ``#include "x.h"`` of a header in :data:`SOURCE_DIR`.
_LOCAL_INCLUDE = re.compile(r'^#include "([A-Za-z0-9_]+\.h)"$', re.MULTILINE)


def _source() -> str:
    """The runtime as one self-contained text: every ``native/*.cc`` in name order, each
    local header (``native/*.h``) inlined where it is first included. It is what the runtime
    is compiled, cached (by its hash) and shipped from; one translation unit, so the
    compiler sees (and inlines across) all of it, as it did when it was one file."""
    seen: set[str] = set()

    def inline(match: re.Match[str]) -> str:
        name = match[1]
        if name in seen:
            return f"// ---- {name} (included above) ----"
        seen.add(name)
        text = (SOURCE_DIR / name).read_text()
        return f"// ---- {name} ----\n" + _LOCAL_INCLUDE.sub(inline, text)

    files = sorted(SOURCE_DIR.glob("*.cc"))
    return "\n".join(
        f"// ---- {path.name} ----\n" + _LOCAL_INCLUDE.sub(inline, path.read_text())
        for path in files
    )


def _key(source: str) -> str:
    """Cache key: the runtime source, the oneDNN build it links and the flags."""
    onednn = find_onednn()
    return cache_key({_SOURCE_NAME: source}, _FLAGS, onednn.version, str(onednn.library))


def _private_dir(key: str) -> Path:
    return private_dir("dnnl", key)


def _compile(source: str, target: Path, cxx: list[str]) -> None:
    onednn = find_onednn()
    include = onednn.require_headers()
    link = [f"-L{onednn.lib_dir}", "-l:" + onednn.library.name, f"-Wl,-rpath,{onednn.lib_dir}"]
    compile_shared({_SOURCE_NAME: source}, target, cxx, [*_FLAGS, f"-I{include}"], link,
                   "the dnnl runtime")  # fmt: skip


#: How long an idle OpenMP thread spins before it sleeps, when the user sets no policy
#: (``GOMP_SPINCOUNT``; read once, when libgomp loads). GNU OpenMP's default spins
#: 300,000 times, ``OMP_WAIT_POLICY=PASSIVE`` not at all.
SPIN_COUNT = "10000"


def _openmp_loaded() -> bool:
    try:
        with open("/proc/self/maps") as f:
            return "libgomp" in f.read()
    except OSError:
        return True  # cannot tell: leave the environment alone


def _default_wait_policy() -> None:
    """Idle oneDNN threads spin briefly, then sleep, unless the user chose otherwise.

    This is onnxruntime's intra-op pool's behaviour: a short spin catches the next
    primitive of the same region without a wake-up, and sleeping afterwards leaves the
    core to whoever needs it. Measured on the 2-core test machine with
    ``benchmarks/transformers.py`` at 2 threads, relaykit+dnnl / onnxruntime for
    BERT-tiny and the issue's BERT, quiet machine:
    0.63x, 0.66x with 10,000 spins; 0.89x, 0.70x with 30,000; 1.42x, 1.37x PASSIVE.
    With 8 busy processes: 0.35x, 0.93x with 10,000; 0.45x, 7.14x with 30,000;
    2.87x, 1.37x PASSIVE. GNU OpenMP's default (300,000) was 17x under load 12.
    """
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return
    if not _openmp_loaded():
        os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT


def _preload_onednn() -> None:
    """Load libdnnl globally first, so the runtime resolves it wherever it was built."""
    onednn = find_onednn()
    _default_wait_policy()
    ctypes.CDLL(str(onednn.library), mode=ctypes.RTLD_GLOBAL)


def _bind(path: Path) -> NativeRuntime:
    _preload_onednn()
    dll = ctypes.CDLL(str(path))
    vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    pp = ctypes.POINTER(ctypes.c_void_p)
    sig = {
        "rkdnnl_abi": (cp, []),
        "rkdnnl_last_error": (cp, []),
        "rkdnnl_create": (vp, [cp, pp, i, i]),
        "rkdnnl_context_create": (vp, [vp]),
        "rkdnnl_context_destroy": (None, [vp]),
        "rkdnnl_run": (i, [vp, vp, pp, pp]),
        "rkdnnl_profile": (i, [vp, vp, pp, pp, ctypes.POINTER(ctypes.c_double)]),
        "rkdnnl_num_steps": (i, [vp]),
        "rkdnnl_step_info": (cp, [vp, i]),
        "rkdnnl_arena_bytes": (ctypes.c_longlong, [vp]),
        "rkdnnl_destroy": (None, [vp]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(dll, name)
        fn.restype = res
        fn.argtypes = args
    return NativeRuntime(path, dll)


_loaded: dict[str, NativeRuntime] = {}


def _load_or_compile(source: str) -> NativeRuntime:
    key = _key(source)
    with _lock:
        if key in _loaded:
            return _loaded[key]
        target = _private_dir(key) / _LIB_NAME
        if not target.exists():
            _compile(source, target, _compiler())
        runtime = _bind(target)
        _loaded[key] = runtime
        return runtime


def load_runtime() -> NativeRuntime:
    """The runtime library for the installed oneDNN, compiled on first use."""
    return _load_or_compile(_source())


def runtime_blob() -> dict[str, bytes]:
    """What an exported model carries: the compiled library, its source and ABI tag."""
    runtime = load_runtime()
    return {
        "library": runtime.path.read_bytes(),
        "source": _source().encode(),
        "abi": runtime.abi.encode(),
    }


def _own_runtime(abi: str) -> NativeRuntime:
    """relaykit's own runtime (from the shipped ``native/*.cc``), which must speak ``abi``."""
    local = load_runtime()
    if local.abi != abi:
        raise NativeCodeRefusedError(
            f"the file's dnnl regions were built for the runtime ABI {abi!r}, and relaykit's own "
            f"runtime here is {local.abi!r}; the runtime the file carries was refused "
            "(allow_native=False). Export the model again with this relaykit, or load with "
            "allow_native=True only if you trust the file's origin (see docs/artifacts.md)"
        )
    return local


def _sha_prefix(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:20]


def load_runtime_blob(blob: dict[str, bytes], allow_native: bool = True) -> NativeRuntime:
    """The runtime for a loaded model: the local build when it matches the carried ABI,
    else (only with ``allow_native``) the carried library, else the carried source compiled
    here. Without ``allow_native`` nothing the file carries is written, loaded or compiled."""
    find_onednn()  # a clear error first when oneDNN is missing
    abi = blob.get("abi", b"").decode()
    if not allow_native:
        return _own_runtime(abi)
    try:
        local = load_runtime()
    except (CompilerNotFoundError, CompileError):
        local = None
    if local is not None and local.abi == abi:
        return local
    library = blob.get("library")
    if library:
        digest = hashlib.sha256(library).hexdigest()[:20]
        with _lock:
            if digest in _loaded:
                return _loaded[digest]
            target = _private_dir("blob-" + digest) / _LIB_NAME
            if not target.exists() or _sha_prefix(target) != digest:
                fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".so.tmp")
                with os.fdopen(fd, "wb") as f:
                    f.write(library)
                os.replace(tmp, target)
            try:
                runtime = _bind(target)
            except OSError:
                runtime = None
            if runtime is not None and runtime.abi == abi:
                _loaded[digest] = runtime
                return runtime
    source = blob.get("source")
    if not source:
        raise CompileError(
            "the exported dnnl module carries no runtime this machine can load "
            f"(ABI {abi!r}); re-export it with this relaykit. Needs: {INSTALL_HINT}"
        )
    return _load_or_compile(source.decode())
