"""Loading a compiled shared library from bytes, after checking its hash.

The bytes are written to a fresh private directory (mode 0700, from
``tempfile.mkdtemp``) under a fixed file name and opened with ``RTLD_LOCAL``,
so two libraries defining the same symbols never clash; on POSIX systems the
file and directory are removed as soon as the library is mapped. The library is
unmapped (``dlclose``) when its ``CDLL`` object is garbage-collected: take its
functions with ``lib[name]`` (not ``lib.name``, which caches the function on the
library and so keeps it alive until a cyclic collection).

>>> sha256_hex(b"")[:12]
'e3b0c44298fc'
"""

from __future__ import annotations

import _ctypes
import contextlib
import ctypes
import hashlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable
from typing import Any

from relaykit.errors import ArtifactCorruptError, ArtifactError

__all__ = ["sha256_hex", "load_library_bytes"]


#: ``dlclose`` (POSIX) or ``FreeLibrary`` (Windows), where ctypes has them.
_UNLOAD: Callable[[Any], Any] | None = getattr(_ctypes, "dlclose", None) or getattr(
    _ctypes, "FreeLibrary", None
)


def _release(handle: int) -> None:
    if _UNLOAD is not None:
        # already closed, or the loader refused: nothing more to do
        with contextlib.suppress(OSError):
            _UNLOAD(handle)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_library_bytes(data: bytes, expected_sha256: str, owner: str) -> ctypes.CDLL:
    """``ctypes.CDLL`` of the library ``data``; ``owner`` names it in errors.

    Raises :class:`~relaykit.errors.ArtifactCorruptError` when the hash differs
    from ``expected_sha256`` (nothing is written or loaded then).
    """
    if sha256_hex(data) != expected_sha256:
        raise ArtifactCorruptError(
            f"the compiled library of {owner} does not match its recorded SHA-256; "
            "refusing to load it (the file is corrupted or was tampered with)"
        )
    directory = tempfile.mkdtemp(prefix="relaykit-lib-")
    path = os.path.join(directory, "module.so")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        try:
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_LOCAL", 0) | os.RTLD_NOW)
        except OSError as err:
            raise ArtifactError(f"cannot load the compiled library of {owner}: {err}") from None
    finally:
        if os.name == "posix":
            shutil.rmtree(directory, ignore_errors=True)
    # Unmapped when the last reference goes (functions taken with lib[name] hold one).
    release = weakref.finalize(lib, _release, lib._handle)
    release.atexit = False  # the process unmaps everything when it ends
    return lib
