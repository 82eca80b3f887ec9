"""One-file export of runtime modules, and loading them back (``tvm.runtime.load_module``).

The file is a ZIP container (members stored uncompressed, so reading cannot
inflate beyond the file's size) holding ``manifest.json`` and, per module, its
raw files (compiled libraries, C source, JSON graphs) and arrays in NumPy's
``.npy`` format written and read with ``allow_pickle=False``. The manifest
records the format name and version, each module's ``type_key``, metadata
and imports, and the size and SHA-256 of every member; loading checks all of
them before any module is rebuilt. Nothing in the file is unpickled or
evaluated; a compiled library is loaded only after its hash was verified
(pass ``allow_native=False`` to refuse files with native code).

>>> import numpy as np, os, tempfile
>>> from relaykit.runtime.module import PythonModule
>>> path = os.path.join(tempfile.mkdtemp(), "m.rkmod")
>>> export_module(PythonModule("x", {}), path)  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ArtifactError: a 'python' module cannot be exported ...
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import os
import re
import tempfile
import zipfile
from typing import Any

import numpy as np

from relaykit._version import __version__
from relaykit.dtypes import DTYPES, ML_DTYPES
from relaykit.errors import ArtifactCorruptError, ArtifactError, ArtifactVersionError, RelayKitError

from .module import Module, ModuleBlob, module_loaders

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "export_module", "load_module", "read_manifest"]

FORMAT_NAME = "relaykit.module"
FORMAT_VERSION = 1
_MANIFEST = "manifest.json"
_MAX_MANIFEST_BYTES = 64 << 20
_PROVIDER = re.compile(r"^relaykit(\.[A-Za-z_][A-Za-z0-9_]*)+$")


# -- writing -------------------------------------------------------------------------------------


def _collect(root: Module) -> list[Module]:
    """``root`` and every module it imports, once each, parents before children."""
    order: list[Module] = []
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


def export_module(module: Module, path: str | os.PathLike[str]) -> None:
    """Write ``module`` and its imports to the single file ``path`` (atomically; arrays are
    streamed, never held twice in memory)."""
    modules = _collect(module)
    index = {id(m): i for i, m in enumerate(modules)}
    path = os.fspath(path)
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
            zf.writestr(_MANIFEST, text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# -- reading -------------------------------------------------------------------------------------


def _corrupt(path: str, what: str) -> ArtifactCorruptError:
    return ArtifactCorruptError(
        f"cannot load {path!r}: {what}. The file is truncated, corrupted, or was not written "
        "by relaykit's export_library; export the model again"
    )


def _expect(cond: bool, path: str, what: str) -> None:
    if not cond:
        raise _corrupt(path, what)


def _open(path: str) -> zipfile.ZipFile:
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as err:
        raise ArtifactError(f"cannot read {path!r}: {err.strerror or err}") from None
    if head == b"\x7fELF":
        raise _corrupt(path, "it is a native shared library, not a relaykit module file")
    _expect(head == b"PK\x03\x04", path, "it does not start with the relaykit module signature")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as err:
        raise _corrupt(path, f"the container is damaged ({err})") from None


def _read_member(zf: zipfile.ZipFile, path: str, name: str, size: int, sha: str) -> bytes:
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise _corrupt(path, f"member {name!r} is missing") from None
    _expect(info.compress_type == zipfile.ZIP_STORED, path, f"member {name!r} is compressed")
    _expect(info.file_size == size, path, f"member {name!r} has the wrong size")
    try:
        data = zf.read(name)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError) as err:
        raise _corrupt(path, f"member {name!r} cannot be read ({err})") from None
    _expect(hashlib.sha256(data).hexdigest() == sha, path, f"member {name!r} fails its checksum")
    return data


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The checked manifest of a module file (format, version, modules, members)."""
    path = os.fspath(path)
    with _open(path) as zf:
        return _manifest(zf, path)


def _manifest(zf: zipfile.ZipFile, path: str) -> dict[str, Any]:
    try:
        info = zf.getinfo(_MANIFEST)
    except KeyError:
        raise _corrupt(path, "it has no manifest") from None
    _expect(info.file_size <= _MAX_MANIFEST_BYTES, path, "the manifest is implausibly large")
    try:
        manifest = json.loads(zf.read(_MANIFEST))
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError) as err:
        raise _corrupt(path, f"the manifest cannot be read ({err})") from None
    _expect(isinstance(manifest, dict), path, "the manifest is not an object")
    _expect(manifest.get("format") == FORMAT_NAME, path, "the manifest names another format")
    version = manifest.get("version")
    _expect(isinstance(version, int) and not isinstance(version, bool), path, "no format version")
    if version != FORMAT_VERSION:
        newer = version > FORMAT_VERSION
        raise ArtifactVersionError(
            f"cannot load {path!r}: it is in relaykit module format version {version}, written by "
            f"{manifest.get('writer', 'an unknown writer')}; this relaykit reads version "
            f"{FORMAT_VERSION}. "
            + ("Upgrade relaykit to load it." if newer else "Export the model again.")
        )
    members = manifest.get("members")
    modules = manifest.get("modules")
    _expect(isinstance(members, dict), path, "the member table is missing")
    _expect(isinstance(modules, list) and len(modules) > 0, path, "the module list is missing")
    root = manifest.get("root")
    _expect(
        isinstance(root, int) and not isinstance(root, bool) and 0 <= root < len(modules),
        path,
        "the root module index is invalid",
    )
    for name, rec in members.items():
        _expect(
            isinstance(rec, dict)
            and isinstance(rec.get("size"), int)
            and isinstance(rec.get("sha256"), str),
            path,
            f"member record {name!r} is malformed",
        )
    for i, m in enumerate(modules):
        ok = (
            isinstance(m, dict)
            and isinstance(m.get("type_key"), str)
            and isinstance(m.get("provider", ""), str)
            and isinstance(m.get("meta"), dict)
            and isinstance(m.get("files"), dict)
            and isinstance(m.get("arrays"), dict)
            and isinstance(m.get("imports"), list)
            and all(
                isinstance(j, int) and not isinstance(j, bool) and 0 <= j < len(modules)
                for j in m["imports"]
            )
        )
        _expect(ok, path, f"module record {i} is malformed")
    return manifest


def _loader(type_key: str, provider: str, path: str) -> Any:
    loader = module_loaders.get(type_key)
    if loader is None and provider and _PROVIDER.match(provider):
        with contextlib.suppress(ImportError):
            importlib.import_module(provider)
        loader = module_loaders.get(type_key)
    if loader is None:
        raise ArtifactError(
            f"cannot load {path!r}: it holds a {type_key!r} module and no loader is registered "
            f"for that type; import the backend package that provides it"
            + (f" ({provider})" if provider else "")
            + " before load_module"
        )
    return loader


def _restore_ml_dtype(arr: np.ndarray, dtype: Any) -> np.ndarray:
    """Reinterpret the stored bits of an ``ml_dtypes`` array (see :func:`_storage_view`; older
    files hold raw void, ``V2``/``V1``) as the dtype the manifest records; any other array is
    returned unchanged."""
    if dtype not in ML_DTYPES or arr.dtype.names is not None or arr.dtype.kind not in "uV":
        return arr
    target = DTYPES.get(dtype)
    if target is None:  # written where ml_dtypes was installed, read where it is not
        raise ArtifactError(
            f"the module file holds a {dtype} array, which needs the ml_dtypes package: "
            "pip install ml_dtypes"
        )
    if target.itemsize != arr.dtype.itemsize:
        return arr  # reported as a type mismatch by the caller
    return arr.view(target)


def _load_array(data: bytes, rec: Any, path: str, name: str) -> np.ndarray:
    _expect(isinstance(rec, dict), path, f"array record {name!r} is malformed")
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise _corrupt(path, f"array {name!r} cannot be read ({err})") from None
    _expect(isinstance(arr, np.ndarray), path, f"member of array {name!r} is not an array")
    arr = _restore_ml_dtype(arr, rec.get("dtype"))
    _expect(arr.dtype.name in DTYPES, path, f"array {name!r} has unsupported dtype {arr.dtype}")
    _expect(
        arr.dtype.name == rec.get("dtype") and list(arr.shape) == rec.get("shape"),
        path,
        f"array {name!r} does not match its recorded type",
    )
    return arr


def load_module(path: str | os.PathLike[str], allow_native: bool = True) -> Module:
    """Load a module written by ``export_library`` (TVM's ``tvm.runtime.load_module``).

    Raises :class:`~relaykit.errors.ArtifactCorruptError` for a truncated,
    corrupted or foreign file and :class:`~relaykit.errors.ArtifactVersionError`
    for an incompatible format version. ``allow_native=False`` refuses files
    holding compiled native libraries.
    """
    path = os.fspath(path)
    with _open(path) as zf:
        manifest = _manifest(zf, path)
        members = manifest["members"]
        blobs: list[ModuleBlob] = []
        for i, rec in enumerate(manifest["modules"]):
            files: dict[str, bytes] = {}
            arrays: dict[str, np.ndarray] = {}
            for name, member in rec["files"].items():
                _expect(member in members, path, f"file {name!r} of module {i} is not listed")
                m = members[member]
                files[name] = _read_member(zf, path, member, m["size"], m["sha256"])
            for name, arec in rec["arrays"].items():
                member = arec.get("member", "") if isinstance(arec, dict) else ""
                _expect(member in members, path, f"array {name!r} of module {i} is not listed")
                m = members[member]
                data = _read_member(zf, path, member, m["size"], m["sha256"])
                arrays[name] = _load_array(data, arec, path, name)
            blob = ModuleBlob(rec["type_key"], rec["meta"], files, arrays, rec.get("provider", ""))
            if not allow_native and blob.meta.get("native"):
                raise ArtifactError(
                    f"{path!r} holds a compiled native library (module {i}, {blob.type_key}) "
                    "and allow_native=False; load it only if you trust where it came from"
                )
            blobs.append(blob)
    modules: list[Module] = []
    for i, blob in enumerate(blobs):
        loader = _loader(blob.type_key, blob.provider, path)
        try:
            mod = loader(blob)
        except RelayKitError:
            raise
        except Exception as err:  # a loader met data it did not expect
            raise _corrupt(
                path, f"module {i} ({blob.type_key}) cannot be rebuilt: {type(err).__name__}: {err}"
            ) from None
        if not isinstance(mod, Module):
            raise ArtifactError(f"the loader of {blob.type_key!r} returned {mod!r}, not a Module")
        modules.append(mod)
    for mod, rec in zip(modules, manifest["modules"], strict=True):
        mod.imported_modules = [modules[j] for j in rec["imports"]]
    return modules[manifest["root"]]
