"""Finding the system C compiler and compiling generated C into a shared library.

The compiler is ``$RELAYKIT_CC``, else ``$CC``, else the first of ``cc``,
``gcc``, ``clang`` on ``PATH``. No compiler gives a
:class:`~relaykit.errors.CompilerNotFoundError` naming the backend and what to
install; a compile failure gives a :class:`~relaykit.errors.CompileError` with
the compiler's message and the path of the generated source, which is kept.

>>> cc = find_c_compiler("demo")  # doctest: +SKIP
>>> lib = compile_shared_library("int f(void) { return 1; }", "demo")  # doctest: +SKIP
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from relaykit.runtime.native_build import compile_shared, find_compiler

__all__ = ["find_c_compiler", "compile_shared_library", "DEFAULT_CFLAGS"]

DEFAULT_CFLAGS: tuple[str, ...] = ("-O2", "-std=c99", "-fPIC", "-shared", "-fvisibility=hidden")


def find_c_compiler(backend: str) -> list[str]:
    """The compiler command (as an argument list) for ``backend``'s generated code."""
    return find_compiler(f"the C code that backend {backend!r} generates")


def compile_shared_library(
    source: str,
    backend: str,
    functions: Sequence[str] = (),
    cflags: Sequence[str] = DEFAULT_CFLAGS,
    libs: Sequence[str] = ("-lm",),
    timeout: float = 600.0,
) -> bytes:
    """Compile ``source`` into a shared library and return its bytes.

    ``functions`` (the symbols being compiled) only serve the error message; on a
    failure the generated source is kept for inspection.
    """
    cc = find_c_compiler(backend)
    workdir = Path(tempfile.mkdtemp(prefix=f"relaykit-{_safe(backend)}-"))
    out = workdir / "module.so"
    what = f" for {', '.join(functions)}" if functions else ""
    what = f"the code that backend {backend!r} generated{what}"
    compile_shared({"module.c": source}, out, cc, cflags, libs, what, timeout, "Generated source")
    data = out.read_bytes()
    shutil.rmtree(workdir, ignore_errors=True)
    return data


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)[:40] or "backend"
