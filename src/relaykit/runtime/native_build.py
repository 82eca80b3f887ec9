"""Compile relaykit's own C/C++ sources once into a private, per-user cache.

Both native pieces of relaykit (the oneDNN region runtime and the host kernels)
ship as source and are compiled the first time they are needed, then loaded
from the cache afterwards. The cache key covers the sources, the compiler, the
flags and whatever else the caller names (a library version, the CPU), so a
change to any of them builds a new library next to the old one::

    ~/.cache/relaykit/<subdir>/<key>/<lib_name>   (RELAYKIT_CACHE_DIR overrides ~/.cache/relaykit)

Only sources relaykit ships are compiled here; nothing a model file carries.

>>> key = cache_key({"a.c": "int f(void) { return 1; }"}, ("-O2",), "cc")
>>> len(key)
20
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from relaykit.errors import CompileError, CompilerNotFoundError

__all__ = ["cache_dir", "cache_key", "find_compiler", "private_dir", "compile_shared"]

_INSTALL = (
    "e.g. `apt-get install gcc g++` (Debian/Ubuntu), `dnf install gcc gcc-c++` (Fedora) or "
    "`xcode-select --install` (macOS)"
)
_MAX_MESSAGE = 6000


def cache_dir() -> Path:
    """Root of relaykit's private cache (``RELAYKIT_CACHE_DIR`` or ``~/.cache/relaykit``)."""
    root = os.environ.get("RELAYKIT_CACHE_DIR")
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "relaykit"


def find_compiler(
    what: str,
    env: Sequence[str] = ("RELAYKIT_CC", "CC"),
    names: Sequence[str] = ("cc", "gcc", "clang"),
    kind: str = "C",
) -> list[str]:
    """The compiler command (an argument list) for ``what``: the first of the ``env``
    variables that is set (it may carry flags), else the first of ``names`` on PATH."""
    for var in env:
        value = os.environ.get(var, "").strip()
        if value:
            argv = shlex.split(value)
            exe = shutil.which(argv[0])
            if exe is None:
                raise CompilerNotFoundError(
                    f"{what} is compiled with a {kind} compiler, but the compiler "
                    f"${var}={value!r} was not found. Set {var} to an installed compiler or "
                    f"install one, {_INSTALL}"
                )
            return [exe, *argv[1:]]
    for name in names:
        exe = shutil.which(name)
        if exe is not None:
            return [exe]
    looked = ", ".join([*(f"${v}" for v in env), *names])
    raise CompilerNotFoundError(
        f"{what} is compiled with a {kind} compiler, but no {kind} compiler was found (looked "
        f"for {looked} on PATH). Install one, {_INSTALL}, or set {env[-1]} to its path"
    )


def cache_key(sources: Mapping[str, str], flags: Sequence[str], *parts: str) -> str:
    """A short digest of the sources, the flags and ``parts``."""
    h = hashlib.sha256()
    for name in sorted(sources):
        for piece in (name, sources[name]):
            h.update(piece.encode())
            h.update(b"\0")
    for piece in (" ".join(flags), *parts):
        h.update(piece.encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def private_dir(subdir: str, key: str) -> Path:
    """``<cache>/<subdir>/<key>``, created readable by this user only."""
    d = cache_dir() / subdir / key
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def compile_shared(
    sources: Mapping[str, str],
    target: Path,
    compiler: Sequence[str],
    flags: Sequence[str],
    link: Sequence[str] = (),
    what: str = "a native library",
    timeout: float = 600.0,
    label: str = "Source",
) -> None:
    """Compile ``sources`` (file name -> text) into the shared library ``target``.

    The sources are written to a fresh directory next to the target and kept there
    (for error messages and debuggers), so processes compiling the same library at
    once never read each other's half-written files; the library appears
    atomically, so a concurrent loader sees the whole file or none.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    srcdir = Path(tempfile.mkdtemp(dir=target.parent, prefix="src-"))
    paths = []
    for name, text in sources.items():
        path = srcdir / name
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".so.tmp")
    os.close(fd)
    cmd = [*compiler, *flags, "-o", tmp, *paths, *link]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        os.unlink(tmp)
        raise CompileError(
            f"the compiler did not finish within {timeout:.0f} s compiling {what}.\n"
            f"{label} (kept for inspection): {', '.join(paths)}"
        ) from None
    except OSError as err:
        os.unlink(tmp)
        raise CompilerNotFoundError(
            f"could not run the compiler {compiler[0]!r} for {what}: {err}. Install a working "
            f"compiler, {_INSTALL}, or set CC"
        ) from None
    if proc.returncode != 0 or os.path.getsize(tmp) == 0:
        os.unlink(tmp)
        message = (proc.stderr or proc.stdout or "").strip()
        if len(message) > _MAX_MESSAGE:
            message = message[:_MAX_MESSAGE] + "\n... (truncated)"
        raise CompileError(
            f"the compiler failed (exit code {proc.returncode}) on {what}:\n{message}\n"
            f"{label} (kept for inspection): {', '.join(paths)}\nCommand: {shlex.join(cmd)}"
        )
    os.replace(tmp, target)
