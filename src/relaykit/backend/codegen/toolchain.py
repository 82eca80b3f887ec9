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

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence

from relaykit.errors import CompileError, CompilerNotFoundError

__all__ = ["find_c_compiler", "compile_shared_library", "DEFAULT_CFLAGS"]

DEFAULT_CFLAGS: tuple[str, ...] = ("-O2", "-std=c99", "-fPIC", "-shared", "-fvisibility=hidden")
_CANDIDATES = ("cc", "gcc", "clang")
_MAX_MESSAGE = 6000


def find_c_compiler(backend: str) -> list[str]:
    """The compiler command (as an argument list) for ``backend``'s generated code."""
    for var in ("RELAYKIT_CC", "CC"):
        value = os.environ.get(var, "").strip()
        if value:
            argv = shlex.split(value)
            exe = shutil.which(argv[0])
            if exe is None:
                raise CompilerNotFoundError(
                    f"backend {backend!r} compiles generated C code, but the C compiler "
                    f"${var}={value!r} was not found. Set {var} to an installed compiler or "
                    "install one, e.g. `apt-get install gcc` (Debian/Ubuntu), "
                    "`dnf install gcc` (Fedora) or Xcode's command line tools (macOS)"
                )
            return [exe, *argv[1:]]
    for name in _CANDIDATES:
        exe = shutil.which(name)
        if exe is not None:
            return [exe]
    raise CompilerNotFoundError(
        f"backend {backend!r} compiles generated C code, but no C compiler was found "
        f"(looked for $RELAYKIT_CC, $CC and {', '.join(_CANDIDATES)} on PATH). Install one, e.g. "
        "`apt-get install gcc` (Debian/Ubuntu), `dnf install gcc` (Fedora) or `xcode-select "
        "--install` (macOS), or set CC to its path"
    )


def compile_shared_library(
    source: str,
    backend: str,
    functions: Sequence[str] = (),
    cflags: Sequence[str] = DEFAULT_CFLAGS,
    libs: Sequence[str] = ("-lm",),
    timeout: float = 600.0,
) -> bytes:
    """Compile ``source`` into a shared library and return its bytes.

    ``functions`` (the symbols being compiled) only serve the error message.
    """
    cc = find_c_compiler(backend)
    workdir = tempfile.mkdtemp(prefix=f"relaykit-{_safe(backend)}-")
    src = os.path.join(workdir, "module.c")
    out = os.path.join(workdir, "module.so")
    with open(src, "w", encoding="utf-8") as fh:
        fh.write(source)
    cmd = [*cc, *cflags, "-o", out, src, *libs]
    what = f" for {', '.join(functions)}" if functions else ""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise CompileError(
            f"the C compiler did not finish within {timeout:.0f} s compiling the code that backend "
            f"{backend!r} generated{what}.\nGenerated source: {src}"
        ) from None
    except OSError as err:
        raise CompilerNotFoundError(
            f"backend {backend!r} could not run the C compiler {cc[0]!r}: {err}. Install a working "
            "C compiler (e.g. `apt-get install gcc`) or set CC"
        ) from None
    if proc.returncode != 0 or not os.path.exists(out):
        message = (proc.stderr or proc.stdout or "").strip()
        if len(message) > _MAX_MESSAGE:
            message = message[:_MAX_MESSAGE] + "\n... (truncated)"
        raise CompileError(
            f"the C compiler failed (exit code {proc.returncode}) on the code that backend "
            f"{backend!r} generated{what}:\n{message}\n"
            f"Generated source (kept for inspection): {src}\n"
            f"Command: {shlex.join(cmd)}"
        )
    with open(out, "rb") as fh:
        data = fh.read()
    shutil.rmtree(workdir, ignore_errors=True)
    return data


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)[:40] or "backend"
