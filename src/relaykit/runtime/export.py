"""The saved form of runtime modules, and writing them to one file (``export_library``).

A module saves itself as a :class:`ModuleBlob` (JSON-able metadata, raw files, arrays --
never pickle); :func:`export_module` streams a module and everything it imports into one
ZIP archive (:mod:`relaykit.runtime.archive`): each module's files, its arrays in NumPy's
``.npy`` format, the manifest (format name and version, each module's ``type_key``,
metadata and imports, the size and SHA-256 of every member) and the integrity record.
:mod:`relaykit.runtime.artifact` reads such a file back.

The writer needs of a module only what :class:`Exportable` names, so it sits below
:class:`~relaykit.runtime.module.Module`, whose ``export_library`` calls it.

>>> import os, tempfile
>>> from relaykit.runtime.module import PythonModule
>>> path = os.path.join(tempfile.mkdtemp(), "m.rkmod")
>>> export_module(PythonModule("x", {}), path)  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ArtifactError: a 'python' module cannot be exported ...
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import warnings
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from relaykit._version import __version__
from relaykit.dtypes import DTYPES, ML_DTYPES
from relaykit.errors import ArtifactError

from .archive import INTEGRITY, MANIFEST, integrity_record

__all__ = [
    "ArtifactSuffixWarning",
    "Exportable",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "ModuleBlob",
    "NATIVE_SUFFIXES",
    "export_module",
]

FORMAT_NAME = "relaykit.module"
FORMAT_VERSION = 2


@dataclass
class ModuleBlob:
    """A saved module: JSON-able ``meta``, raw ``files`` and ``arrays``.

    ``provider`` names the ``relaykit.*`` Python module whose import registers the
    loader of this ``type_key``, so that a file can be loaded before the backend
    package was imported.

    ``allow_native`` is not part of the file: ``load_module`` sets it from its own
    argument. When it is False a loader must not load, write or compile native code
    taken from ``files`` (a library, or source to compile): it rebuilds its kernels
    from relaykit's own sources, or raises
    :class:`~relaykit.errors.NativeCodeRefusedError`. Nothing in ``meta`` may change
    that decision.
    """

    type_key: str
    meta: dict[str, Any] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    provider: str = ""
    allow_native: bool = True


class Exportable(Protocol):
    """What the writer reads of a runtime module (:class:`~relaykit.runtime.module.Module`
    has it): its ``type_key``, the modules it imports and its saved form."""

    @property
    def type_key(self) -> str: ...

    @property
    def imported_modules(self) -> Sequence[Exportable]: ...

    def save_blob(self) -> ModuleBlob: ...


def _collect(root: Exportable) -> list[Exportable]:
    """``root`` and every module it imports, once each, parents before children."""
    order: list[Exportable] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        m = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        order.append(m)
        stack.extend(reversed(m.imported_modules))
    return order


class _HashingWriter:
    """A write-only file that hashes and counts what passes through it."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.sha.update(view)
        self.size += view.nbytes
        return self.raw.write(view)

    def record(self) -> dict[str, Any]:
        return {"size": self.size, "sha256": self.sha.hexdigest()}


def _storage_view(arr: np.ndarray) -> np.ndarray:
    """``.npy`` has no descriptor for the ``ml_dtypes`` types (bfloat16, float8, int4, ...):
    ``np.load`` returns bfloat16 as raw void and rejects float8_e5m2's ``<f1``. Such an array
    is stored as the unsigned integers of its width; the manifest keeps its dtype name and
    loading views the bits back (:func:`_restore_ml_dtype`)."""
    if arr.dtype.name in ML_DTYPES:
        return arr.view(f"uint{8 * arr.dtype.itemsize}")
    return arr


def _write_blob(
    zf: zipfile.ZipFile, i: int, blob: ModuleBlob, members: dict[str, Any]
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Stream one module's files and arrays into the container; their manifest records."""
    files: dict[str, str] = {}
    for j, (name, data) in enumerate(sorted(blob.files.items())):
        member = f"modules/{i}/files/{j}"
        with zf.open(member, "w", force_zip64=True) as raw:
            w = _HashingWriter(raw)
            w.write(bytes(data))
        members[member] = w.record()
        files[name] = member
    arrays: dict[str, dict[str, Any]] = {}
    for j, (name, value) in enumerate(blob.arrays.items()):
        arr = np.asarray(value, order="C")
        if arr.dtype.name not in DTYPES:
            raise ArtifactError(
                f"array {name!r} of the {blob.type_key} module has dtype {arr.dtype}, "
                "which cannot be exported"
            )
        member = f"modules/{i}/arrays/{j}.npy"
        with zf.open(member, "w", force_zip64=True) as raw:
            w = _HashingWriter(raw)
            np.save(w, _storage_view(arr), allow_pickle=False)
        members[member] = w.record()
        arrays[name] = {"member": member, "dtype": arr.dtype.name, "shape": list(arr.shape)}
    return files, arrays


#: Suffixes of TVM's native export formats (a shared library, a tar of objects).
NATIVE_SUFFIXES = (".so", ".dylib", ".dll", ".tar", ".o")


class ArtifactSuffixWarning(UserWarning):
    """``export_library`` was given a name whose suffix promises a native library (``.so``
    ...): the file is written, as TVM scripts expect, but it is a relaykit artifact."""


def _warn_native_suffix(path: str) -> None:
    suffix = os.path.splitext(path)[1].lower()
    if suffix in NATIVE_SUFFIXES:
        warnings.warn(
            f"export_library({os.path.basename(path)!r}) writes a relaykit artifact (format "
            f"{FORMAT_NAME!r}, a ZIP file), not a native {suffix} file: load it with "
            "relaykit.runtime.load_module (tvm.runtime.load_module), not ctypes or dlopen. "
            "Name it .rkmod to say so",
            ArtifactSuffixWarning,
            stacklevel=4,
        )


def export_module(module: Exportable, path: str | os.PathLike[str]) -> None:
    """Write ``module`` and its imports to the single file ``path`` (atomically; arrays are
    streamed, never held twice in memory). The file is a ZIP-based relaykit artifact
    whatever its suffix; a native suffix (``.so``, ``.tar`` ...) warns
    (:class:`ArtifactSuffixWarning`)."""
    modules = _collect(module)
    index = {id(m): i for i, m in enumerate(modules)}
    path = os.fspath(path)
    _warn_native_suffix(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".relaykit-export-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
            members: dict[str, Any] = {}
            entries: list[dict[str, Any]] = []
            for i, m in enumerate(modules):
                blob = m.save_blob()
                if not isinstance(blob, ModuleBlob):
                    raise ArtifactError(f"{m.type_key} module's save_blob() returned {blob!r}")
                files, arrays = _write_blob(zf, i, blob, members)
                entries.append(
                    {
                        "type_key": blob.type_key,
                        "provider": blob.provider,
                        "meta": blob.meta,
                        "files": files,
                        "arrays": arrays,
                        "imports": [index[id(c)] for c in m.imported_modules],
                    }
                )
            manifest = {
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "writer": f"relaykit {__version__}",
                "root": 0,
                "modules": entries,
                "members": members,
            }
            try:
                text = json.dumps(manifest, allow_nan=False, sort_keys=True).encode()
            except (TypeError, ValueError) as err:
                raise ArtifactError(f"module metadata is not JSON-serialisable: {err}") from None
            zf.writestr(MANIFEST, text)
            zf.writestr(INTEGRITY, integrity_record(text))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
