"""Loading one-file exports of runtime modules back (``tvm.runtime.load_module``).

The file (written by :func:`~relaykit.runtime.export.export_module`, re-exported here) is
a ZIP archive (see :mod:`relaykit.runtime.archive`) holding, per module, its raw files
(compiled libraries, C source, JSON graphs) and arrays in NumPy's ``.npy`` format (never
pickled), the manifest (format name and version,
each module's ``type_key``, metadata and imports, the size and SHA-256 of every
member) and the integrity record: the SHA-256 of the manifest, which therefore
covers every byte that steers loading. Loading checks, in this order and before
any module is rebuilt: the manifest against the integrity record, the
signatures when ``trusted_keys`` are given (:mod:`relaykit.runtime.signing`), the
member list against the manifest, and each member's size and hash; an array's
``.npy`` header is checked against the manifest before anything is allocated.

``allow_native=False`` guarantees that no native code from the file is loaded,
written or compiled: each module's loader rebuilds its kernels from relaykit's
own sources or raises :class:`~relaykit.errors.NativeCodeRefusedError`. The
trust model is written down in ``docs/artifacts.md``.

>>> import numpy as np, os, tempfile
>>> from relaykit.runtime.module import PythonModule
>>> path = os.path.join(tempfile.mkdtemp(), "m.rkmod")
>>> export_module(PythonModule("x", {}), path)  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ArtifactError: a 'python' module cannot be exported ...
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.dtypes import DTYPES, ML_DTYPES
from relaykit.errors import ArtifactError, ArtifactVersionError, RelayKitError

from .archive import (
    check_member_names,
    corrupt,
    expect,
    open_container,
    parse_json,
    read_member,
    read_sealed,
)
from .export import (
    FORMAT_NAME,
    FORMAT_VERSION,
    NATIVE_SUFFIXES,
    ArtifactSuffixWarning,
    ModuleBlob,
    export_module,
)
from .module import Module, module_loaders
from .signing import TrustedKey, verify_signatures

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "export_module",
    "load_module",
    "read_manifest",
    "artifact_digest",
    "ArtifactSuffixWarning",
    "NATIVE_SUFFIXES",
]

_NPY_MAGIC = b"\x93NUMPY"
_MAX_NPY_HEADER = 1 << 16
_PROVIDER = re.compile(r"^relaykit(\.[A-Za-z_][A-Za-z0-9_]*)+$")


# -- reading -------------------------------------------------------------------------------------


def _is_index(v: Any, n: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n


def _check_version(manifest: dict[str, Any], path: str) -> None:
    expect(manifest.get("format") == FORMAT_NAME, path, "the manifest names another format")
    version = manifest.get("version")
    expect(isinstance(version, int) and not isinstance(version, bool), path, "no format version")
    if version != FORMAT_VERSION:
        newer = int(version) > FORMAT_VERSION  # type: ignore[arg-type]
        raise ArtifactVersionError(
            f"cannot load {path!r}: it is in relaykit module format version {version}, written by "
            f"{manifest.get('writer', 'an unknown writer')}; this relaykit reads version "
            f"{FORMAT_VERSION}. "
            + ("Upgrade relaykit to load it." if newer else "Export the model again.")
        )


def _check_module_record(m: Any, i: int, n: int, members: dict[str, Any], path: str) -> None:
    ok = (
        isinstance(m, dict)
        and isinstance(m.get("type_key"), str)
        and isinstance(m.get("provider", ""), str)
        and isinstance(m.get("meta"), dict)
        and isinstance(m.get("files"), dict)
        and isinstance(m.get("arrays"), dict)
        and isinstance(m.get("imports"), list)
        and all(_is_index(j, n) for j in m["imports"])
    )
    expect(ok, path, f"module record {i} is malformed")
    for name, member in m["files"].items():
        expect(member in members, path, f"file {name!r} of module {i} is not listed")
    for name, rec in m["arrays"].items():
        ok = isinstance(rec, dict) and rec.get("member") in members
        expect(ok, path, f"array {name!r} of module {i} is not listed")
        shape = rec.get("shape")
        ok = isinstance(shape, list) and all(_is_index(d, 1 << 62) for d in shape)
        expect(ok and isinstance(rec.get("dtype"), str), path,
               f"array {name!r} of module {i} has a malformed type")  # fmt: skip


def _manifest(text: bytes, path: str) -> dict[str, Any]:
    """The parsed manifest (its bytes already matched the integrity record), checked."""
    manifest = parse_json(text, path, "the manifest")
    expect(isinstance(manifest, dict), path, "the manifest is not an object")
    _check_version(manifest, path)
    members = manifest.get("members")
    modules = manifest.get("modules")
    expect(isinstance(members, dict), path, "the member table is missing")
    expect(isinstance(modules, list) and len(modules) > 0, path, "the module list is missing")
    expect(_is_index(manifest.get("root"), len(modules)), path, "the root module index is invalid")
    for i, m in enumerate(modules):
        _check_module_record(m, i, len(modules), members, path)
    return manifest


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The checked manifest of a module file (format, version, modules, members)."""
    path = os.fspath(path)
    with open_container(path) as zf:
        return _manifest(read_sealed(zf, path).manifest, path)


def artifact_digest(path: str | os.PathLike[str]) -> str:
    """The artifact digest (``sha256:<hex>`` of the manifest) of the module file ``path``,
    after checking the manifest against it; what a signature signs."""
    path = os.fspath(path)
    with open_container(path) as zf:
        return read_sealed(zf, path).digest


#: Packages that moved since artifacts began naming their provider: a file written before
#: the move names the old path, which is read as the new one.
_MOVED_PROVIDERS = (
    ("relaykit.backend", "relaykit.execution"),
    ("relaykit.contrib.dnnl", "relaykit.backends.dnnl"),
    ("relaykit.contrib.ccompiler", "relaykit.backends.ccompiler"),
    ("relaykit.contrib.jsonref", "relaykit.backends.jsonref"),
)


def _current_provider(provider: str) -> str:
    for old, new in _MOVED_PROVIDERS:
        if provider == old or provider.startswith(old + "."):
            return new + provider[len(old) :]
    return provider


def _loader(type_key: str, provider: str, path: str) -> Any:
    provider = _current_provider(provider)
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
    """Reinterpret the stored bits of an ``ml_dtypes`` array (see :func:`_storage_view`) as the
    dtype the manifest records; any other array is returned unchanged."""
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


def _npy_header(data: bytearray, path: str, what: str) -> tuple[tuple[int, ...], np.dtype, int]:
    """Shape, dtype and data offset from an ``.npy`` header, read without ``np.load`` (which
    would allocate what the header claims before reading a byte of data)."""
    fmt = np.lib.format
    buf = io.BytesIO(memoryview(data)[: min(len(data), _MAX_NPY_HEADER)])
    try:
        version = fmt.read_magic(buf)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(buf)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(buf)
        else:
            raise corrupt(path, f"{what} has .npy version {version}")
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as err:
        raise corrupt(path, f"{what} has a malformed .npy header ({err})") from None
    expect(not fortran, path, f"{what} is stored in Fortran order")
    expect(not dtype.hasobject, path, f"{what} holds Python objects (pickle), which are refused")
    return tuple(shape), dtype, buf.tell()


def _load_array(data: bytearray, rec: dict[str, Any], path: str, name: str) -> np.ndarray:
    """The array of member ``data`` (a view of it, no copy), after checking its header
    against the manifest record and the member's size."""
    what = f"array {name!r}"
    expect(bytes(data[:6]) == _NPY_MAGIC, path, f"{what} is not in .npy format")
    shape, dtype, offset = _npy_header(data, path, what)
    expect(list(shape) == rec["shape"], path, f"{what} does not match its recorded shape")
    count = 1
    for d in shape:
        count *= d
    expect(
        count * dtype.itemsize == len(data) - offset,
        path,
        f"{what}: its header claims {count} elements of {dtype}, the member holds "
        f"{len(data) - offset} bytes of data",
    )
    arr = np.frombuffer(data, dtype=dtype, count=count, offset=offset).reshape(shape)
    arr = _restore_ml_dtype(arr, rec["dtype"])
    expect(arr.dtype.name in DTYPES, path, f"{what} has unsupported dtype {arr.dtype}")
    expect(arr.dtype.name == rec["dtype"], path, f"{what} does not match its recorded dtype")
    return arr


def _read_blob(
    zf: zipfile.ZipFile, path: str, i: int, rec: dict[str, Any], members: dict[str, Any]
) -> ModuleBlob:
    files: dict[str, bytes] = {}
    arrays: dict[str, np.ndarray] = {}
    kind = rec["type_key"]
    for name, member in rec["files"].items():
        what = f"file {name!r} of module {i}, {kind}"
        files[name] = bytes(read_member(zf, path, member, members[member], what))
    for name, arec in rec["arrays"].items():
        member = arec["member"]
        what = f"array {name!r} of module {i}, {kind}"
        data = read_member(zf, path, member, members[member], what)
        arrays[name] = _load_array(data, arec, path, name)
    return ModuleBlob(kind, rec["meta"], files, arrays, rec.get("provider", ""))


def _rebuild(blob: ModuleBlob, i: int, path: str) -> Module:
    loader = _loader(blob.type_key, blob.provider, path)
    try:
        mod = loader(blob)
    except RelayKitError:
        raise
    except Exception as err:  # a loader met data it did not expect
        raise corrupt(
            path, f"module {i} ({blob.type_key}) cannot be rebuilt: {type(err).__name__}: {err}"
        ) from None
    if not isinstance(mod, Module):
        raise ArtifactError(f"the loader of {blob.type_key!r} returned {mod!r}, not a Module")
    return mod


def load_module(
    path: str | os.PathLike[str],
    allow_native: bool = True,
    trusted_keys: Sequence[TrustedKey] | None = None,
) -> Module:
    """Load a module written by ``export_library`` (TVM's ``tvm.runtime.load_module``).

    Raises :class:`~relaykit.errors.ArtifactCorruptError` when any byte that steers
    loading differs from what was exported (or the file is truncated or foreign) and
    :class:`~relaykit.errors.ArtifactVersionError` for an incompatible format version.

    ``allow_native=False``: no native code from the file is loaded, written or compiled;
    backends rebuild their kernels from relaykit's own sources, or raise
    :class:`~relaykit.errors.NativeCodeRefusedError`. ``trusted_keys`` (public keys, see
    :mod:`relaykit.runtime.signing`): the file must carry a valid signature by one of
    them, else :class:`~relaykit.errors.ArtifactSignatureError`. See ``docs/artifacts.md``.
    """
    path = os.fspath(path)
    with open_container(path) as zf:
        sealed = read_sealed(zf, path)
        if trusted_keys is not None:
            verify_signatures(path, sealed, trusted_keys)
        manifest = _manifest(sealed.manifest, path)
        members = manifest["members"]
        check_member_names(zf, path, members)  # before any member is read
        blobs = [_read_blob(zf, path, i, rec, members) for i, rec in enumerate(manifest["modules"])]
    modules: list[Module] = []
    for i, blob in enumerate(blobs):
        blob.allow_native = bool(allow_native)
        modules.append(_rebuild(blob, i, path))
    for mod, rec in zip(modules, manifest["modules"], strict=True):
        mod.imported_modules = [modules[j] for j in rec["imports"]]
    return modules[manifest["root"]]
