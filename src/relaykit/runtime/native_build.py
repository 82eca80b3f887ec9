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
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from relaykit.errors import CompileError, CompilerNotFoundError

__all__ = ["cache_dir", "cache_key", "find_compiler", "private_dir", "compile_shared"]


def cache_dir() -> Path:
    """Root of relaykit's private cache (``RELAYKIT_CACHE_DIR`` or ``~/.cache/relaykit``)."""
    root = os.environ.get("RELAYKIT_CACHE_DIR")
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "relaykit"


def find_compiler(env: str, names: Sequence[str], what: str) -> str:
    """The compiler named by ``$env``, else the first of ``names`` on PATH."""
    found = os.environ.get(env) or next((p for n in names if (p := shutil.which(n))), None)
    if not found:
        raise CompilerNotFoundError(
            f"{what} is compiled with a C/C++ compiler, and none was found (looked for "
            f"${env}, {', '.join(names)}). Install one (e.g. apt-get install gcc g++)."
        )
    return found


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
    compiler: str,
    flags: Sequence[str],
    link: Sequence[str] = (),
    what: str = "a native library",
) -> None:
    """Compile ``sources`` (file name -> text) into the shared library ``target``.

    The sources are written next to the target (kept, for error messages and
    debuggers); the library appears atomically, so a concurrent loader sees the
    whole file or none.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in sources.items():
        path = target.parent / name
        path.write_text(text)
        paths.append(str(path))
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".so.tmp")
    os.close(fd)
    cmd = [compiler, *flags, *paths, *link, "-o", tmp]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as err:
        os.unlink(tmp)
        raise CompilerNotFoundError(f"cannot run {compiler} to build {what}: {err}") from err
    if proc.returncode != 0:
        os.unlink(tmp)
        raise CompileError(
            f"compiling {what} failed ({' '.join(cmd)}):\n{proc.stderr[-4000:]}\n"
            f"sources: {', '.join(paths)}"
        )
    os.replace(tmp, target)
