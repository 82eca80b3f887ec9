"""Native host kernels: relaykit's own C kernels, compiled once, called through ctypes.

NumPy runs most host operators near memory speed, but not the ones whose inner
loops are not whole-array passes: depthwise convolution, erf/GELU, softmax, layer
norm, and the bias/activation epilogues that NumPy runs as separate passes.
``backend/native/*.c`` implements those in plain C (no dependencies), compiled
with the system C compiler the first time a host executor needs them and cached
per user (see :mod:`relaykit.runtime.native_build`), with ``-march=native``: the
cache key includes the CPU's feature flags.

Every kernel has a NumPy fallback. The native library is not used when
``RELAYKIT_HOST_NATIVE=0``, inside :func:`disabled`, or when no compiler is found
(a warning says so once); results agree with the fallbacks to float32 rounding.
ctypes releases the GIL during a call, so the policy's host workers
(:meth:`relaykit.runtime.threads.ThreadPolicy.run_parallel`) run blocks of one
kernel in parallel.

>>> lib = library()
>>> lib is None or hasattr(lib, "rk_abi")
True
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np

from relaykit.errors import CodegenError
from relaykit.runtime.native_build import (
    cache_key,
    compile_shared,
    find_compiler,
    private_dir,
)

__all__ = [
    "ENV_VAR",
    "SOURCE_DIR",
    "Signature",
    "address",
    "chosen",
    "disabled",
    "f32_contiguous",
    "is_enabled",
    "library",
    "typed",
]

#: Environment variable: ``0`` keeps the host on its NumPy kernels.
ENV_VAR = "RELAYKIT_HOST_NATIVE"
#: The C sources of the host kernels (every ``*.c`` here goes into one library).
SOURCE_DIR = Path(__file__).with_name("native")
_LIB_NAME = "librkhost.so"
_FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-std=c11", "-DNDEBUG")

_lock = threading.Lock()
_state: dict[str, ctypes.CDLL | None] = {}
#: The choice of the innermost ``chosen(...)`` block of this thread (or task), if any.
_CHOSEN: ContextVar[bool | None] = ContextVar("relaykit.host_native.chosen", default=None)


def _cpu_id() -> str:
    """The CPU model and feature flags (``-march=native`` code is only valid on them)."""
    try:
        with open("/proc/cpuinfo") as f:
            lines = [ln for ln in f if ln.startswith(("model name", "flags", "Features"))]
        return platform.machine() + "".join(sorted(set(lines)))
    except OSError:
        return platform.machine() + platform.processor()


def _sources() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(SOURCE_DIR.glob("*.c"))}


def _build() -> ctypes.CDLL:
    sources = _sources()
    cc = find_compiler("relaykit's native host kernels")
    key = cache_key(sources, _FLAGS, *cc, _cpu_id())
    target = private_dir("host", key) / _LIB_NAME
    if not target.exists():
        compile_shared(sources, target, cc, _FLAGS, ("-lm",), "relaykit's native host kernels")
    return ctypes.CDLL(str(target))


def is_enabled() -> bool:
    """Whether host executors created now may use native kernels."""
    chosen = _CHOSEN.get()
    if chosen is not None:
        return bool(chosen)
    return os.environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")


def library() -> ctypes.CDLL | None:
    """The native host kernels, compiled on first use; ``None`` when disabled or unavailable."""
    if not is_enabled():
        return None
    with _lock:
        if "lib" not in _state:
            try:
                _state["lib"] = _build()
            except (CodegenError, OSError) as err:
                _state["lib"] = None
                warnings.warn(
                    f"relaykit's native host kernels are unavailable, the host runs NumPy "
                    f"kernels instead (slower on depthwise convolution, erf, softmax, layer "
                    f"norm): {err}. Set {ENV_VAR}=0 to silence this.",
                    RuntimeWarning,
                    stacklevel=3,
                )
        return _state["lib"]


@contextlib.contextmanager
def chosen(enabled: bool) -> Iterator[None]:
    """In this block (on this thread) native kernels are used when ``enabled`` and the
    library is available, else not, whatever the environment says: an executor binds
    every thread's kernels under the choice it made when it was created."""
    token = _CHOSEN.set(enabled)
    try:
        yield
    finally:
        _CHOSEN.reset(token)


def disabled() -> contextlib.AbstractContextManager[None]:
    """Executors created in this block (on this thread) bind NumPy kernels only."""
    return chosen(False)


#: A kernel's ctypes signature: (result type, argument types).
Signature = tuple[Any, Sequence[Any]]
_typed: dict[tuple[int, int], ctypes.CDLL] = {}  # holds the library: its id stays its own
_typed_lock = threading.Lock()


def typed(
    signatures: Mapping[str, Signature], first_use: Callable[[ctypes.CDLL], None] | None = None
) -> ctypes.CDLL | None:
    """:func:`library` with the ctypes signatures of ``signatures`` set (once per library
    and table; ``first_use`` runs then too), or ``None`` when native kernels are off."""
    lib = library()
    if lib is None:
        return None
    key = (id(lib), id(signatures))
    with _typed_lock:
        if key not in _typed:
            for name, (restype, argtypes) in signatures.items():
                fn = getattr(lib, name)
                fn.restype = restype
                fn.argtypes = list(argtypes)
            if first_use is not None:
                first_use(lib)
            _typed[key] = lib
    return lib


def address(a: np.ndarray | None, offset: int = 0) -> int:
    """The address of element ``offset`` of ``a`` (flat), or 0 for ``None``."""
    return 0 if a is None else int(a.ctypes.data) + offset * a.itemsize


def f32_contiguous(*arrays: np.ndarray | None) -> bool:
    """Whether every array given is C-contiguous float32 (``None`` is skipped)."""
    return all(a is None or (a.dtype == np.float32 and a.flags.c_contiguous) for a in arrays)
