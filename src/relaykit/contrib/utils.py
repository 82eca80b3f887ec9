"""``tvm.contrib.utils``: temporary directories for build products.

>>> d = tempdir()
>>> p = d.relpath("lib.so")
>>> p.startswith(d.path), d.listdir()
(True, [])
>>> d.remove()
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from relaykit.errors import ArgumentError

__all__ = ["TempDirectory", "tempdir", "which"]


class TempDirectory:
    """A directory removed when the object is (or on :meth:`remove`), unless kept.

    ``keep_for_debug=True`` (or ``TempDirectory.set_keep_for_debug()``) keeps it, as
    TVM's does, to inspect generated files.
    """

    _keep_all = False

    def __init__(self, custom_path: str | None = None, keep_for_debug: bool | None = None):
        if custom_path is not None:
            os.makedirs(custom_path, exist_ok=True)
            self.path = os.path.realpath(custom_path)
        else:
            self.path = os.path.realpath(tempfile.mkdtemp(prefix="relaykit-"))
        self._created = custom_path is None
        self._keep = TempDirectory._keep_all if keep_for_debug is None else bool(keep_for_debug)

    @classmethod
    def set_keep_for_debug(cls, keep: bool = True) -> None:
        cls._keep_all = bool(keep)

    @property
    def temp_dir(self) -> str:
        """The directory's path (TVM's attribute name)."""
        return self.path

    def relpath(self, name: str) -> str:
        """The path of ``name`` inside the directory (which must stay inside it)."""
        full = os.path.realpath(os.path.join(self.path, name))
        if os.path.commonpath([full, self.path]) != self.path:
            raise ArgumentError(f"{name!r} is outside the temporary directory {self.path}")
        return full

    def listdir(self) -> list[str]:
        return sorted(os.listdir(self.path))

    def remove(self) -> None:
        if self._created and not self._keep and os.path.isdir(self.path):
            shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> TempDirectory:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()

    def __del__(self) -> None:
        self.remove()

    def __str__(self) -> str:
        return self.path


def tempdir(custom_path: str | None = None, keep_for_debug: bool | None = None) -> TempDirectory:
    """A new :class:`TempDirectory` (TVM's ``tvm.contrib.utils.tempdir``)."""
    return TempDirectory(custom_path, keep_for_debug)


def which(exec_name: str) -> str | None:
    """The full path of a program on PATH, or None."""
    return shutil.which(exec_name)
