"""The archive of a module file: stored ZIP members, the integrity record, signatures.

A module file is a ZIP archive whose members are stored uncompressed (so reading
can never inflate beyond the file's size):

``modules/<i>/...``
    the modules' raw files and ``.npy`` arrays;
``manifest.json``
    every module's ``type_key``, ``meta``, file list, arrays and imports, and the
    size and SHA-256 of every member above;
``integrity.json``
    the *artifact digest*: ``sha256:<hex>`` of the manifest's exact bytes. The
    manifest lists every member's hash, so this one digest covers every byte
    that steers loading (a Merkle tree of depth two);
``signatures.json`` (optional)
    Ed25519 signatures of the artifact digest (:mod:`relaykit.runtime.signing`).

No other member is allowed and no name may occur twice, so nothing in the file
escapes the digest. The digest alone protects against accidents (a truncated
download, a flipped bit); against someone who can rewrite the file it protects
nothing, since they can recompute it — that is what signatures are for.

>>> manifest_digest(b"{}")[:19]
'sha256:44136fa355b3'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass
from typing import Any

from relaykit.errors import ArtifactCorruptError, ArtifactError

__all__ = [
    "MANIFEST",
    "INTEGRITY",
    "SIGNATURES",
    "RESERVED",
    "Sealed",
    "corrupt",
    "expect",
    "manifest_digest",
    "integrity_record",
    "open_container",
    "read_sealed",
    "parse_json",
    "check_member_names",
    "read_member",
    "write_signatures",
]

MANIFEST = "manifest.json"
INTEGRITY = "integrity.json"
SIGNATURES = "signatures.json"
RESERVED = (MANIFEST, INTEGRITY, SIGNATURES)
_MAX_MANIFEST_BYTES = 64 << 20
_MAX_RECORD_BYTES = 1 << 20
_CHUNK = 1 << 20
_FIX = "export the model again, or fetch an intact copy of the file"


def corrupt(path: str, what: str) -> ArtifactCorruptError:
    return ArtifactCorruptError(
        f"cannot load {path!r}: {what}. The file is truncated, corrupted, or was not written "
        f"by relaykit's export_library; {_FIX}"
    )


def expect(cond: bool, path: str, what: str) -> None:
    if not cond:
        raise corrupt(path, what)


def manifest_digest(manifest: bytes) -> str:
    """The artifact digest of a file whose manifest is ``manifest`` (exact bytes)."""
    return "sha256:" + hashlib.sha256(manifest).hexdigest()


def integrity_record(manifest: bytes) -> bytes:
    """The ``integrity.json`` member for ``manifest``."""
    rec = {"format": "relaykit.integrity", "version": 1, "digest": manifest_digest(manifest)}
    return json.dumps(rec, sort_keys=True).encode()


def open_container(path: str) -> zipfile.ZipFile:
    """The ZIP archive at ``path``, after a look at its first bytes."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as err:
        raise ArtifactError(f"cannot read {path!r}: {err.strerror or err}") from None
    if head == b"\x7fELF":
        raise corrupt(path, "it is a native shared library, not a relaykit module file")
    expect(head == b"PK\x03\x04", path, "it does not start with the relaykit module signature")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as err:
        raise corrupt(path, f"the container is damaged ({err})") from None


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ArtifactCorruptError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise ArtifactCorruptError(f"non-standard number {name}")


def parse_json(data: bytes, path: str, what: str) -> Any:
    """Strict JSON: UTF-8, no duplicate keys, no NaN/Infinity."""
    try:
        return json.loads(
            data.decode("utf-8"),
            object_pairs_hook=_reject_duplicates,
            parse_constant=_reject_constant,
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as err:  # ArtifactCorruptError too
        raise corrupt(path, f"{what} is not valid JSON ({err})") from None


def _read_small(zf: zipfile.ZipFile, path: str, name: str, limit: int) -> bytes:
    info = zf.getinfo(name)
    expect(info.compress_type == zipfile.ZIP_STORED, path, f"member {name!r} is compressed")
    expect(info.file_size <= limit, path, f"member {name!r} is implausibly large")
    try:
        return zf.read(name)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError) as err:
        raise corrupt(path, f"member {name!r} cannot be read ({err})") from None


@dataclass(frozen=True)
class Sealed:
    """What a container's integrity rests on: the manifest's bytes, their digest (checked
    against ``integrity.json``) and the signature records (not yet verified)."""

    manifest: bytes
    digest: str
    signatures: list[dict[str, Any]]


def read_sealed(zf: zipfile.ZipFile, path: str) -> Sealed:
    """The manifest bytes, checked against the integrity record."""
    names = zf.namelist()
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise corrupt(path, f"member {twice[0]!r} occurs more than once")
    expect(MANIFEST in names, path, "it has no manifest")
    if INTEGRITY not in names:
        raise corrupt(
            path,
            "it has no integrity record (integrity.json); files written by relaykit before "
            "format version 2 have none",
        )
    manifest = _read_small(zf, path, MANIFEST, _MAX_MANIFEST_BYTES)
    record = parse_json(_read_small(zf, path, INTEGRITY, _MAX_RECORD_BYTES), path, INTEGRITY)
    expect(
        isinstance(record, dict) and isinstance(record.get("digest"), str),
        path,
        "the integrity record is malformed",
    )
    digest = manifest_digest(manifest)
    if record["digest"] != digest:
        raise corrupt(
            path,
            "manifest.json does not match the file's integrity record: the manifest (module "
            "types, metadata, signatures of native functions, member sizes or hashes) changed "
            "after export",
        )
    signatures: list[dict[str, Any]] = []
    if SIGNATURES in names:
        doc = parse_json(_read_small(zf, path, SIGNATURES, _MAX_RECORD_BYTES), path, SIGNATURES)
        ok = isinstance(doc, dict) and isinstance(doc.get("signatures"), list)
        expect(ok and all(isinstance(s, dict) for s in doc["signatures"]), path,
               "the signature record is malformed")  # fmt: skip
        signatures = list(doc["signatures"])
    return Sealed(manifest, digest, signatures)


def check_member_names(zf: zipfile.ZipFile, path: str, members: Any) -> None:
    """The member table is well-formed, every member of the archive is listed in it (or is
    a reserved record), and the listed members together fit in the file."""
    expect(isinstance(members, dict), path, "the member table is missing")
    for name, rec in members.items():
        ok = (
            name not in RESERVED
            and isinstance(rec, dict)
            and isinstance(rec.get("size"), int)
            and not isinstance(rec.get("size"), bool)
            and 0 <= rec["size"] < 1 << 62
            and isinstance(rec.get("sha256"), str)
        )
        expect(ok, path, f"member record {name!r} is malformed")
    extra = [n for n in zf.namelist() if n not in members and n not in RESERVED]
    expect(not extra, path, f"member {extra[0]!r} is not listed in the manifest" if extra else "")
    total = sum(rec["size"] for rec in members.values())
    expect(total <= os.path.getsize(path), path, "its members are larger than the file")


def read_member(
    zf: zipfile.ZipFile, path: str, name: str, rec: dict[str, Any], what: str
) -> bytearray:
    """The bytes of member ``name`` (``what`` says what it holds), checked against its size
    and SHA-256 in the manifest; never more than the recorded size is read."""
    size, sha = rec["size"], rec["sha256"]
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise corrupt(path, f"member {name!r} ({what}) is missing") from None
    expect(info.compress_type == zipfile.ZIP_STORED, path, f"member {name!r} is compressed")
    expect(
        info.file_size == size and info.compress_size == size,
        path,
        f"member {name!r} ({what}) is {info.file_size} bytes, the manifest says {size}",
    )
    buf = bytearray(size)
    view = memoryview(buf)
    h = hashlib.sha256()
    pos = 0
    try:
        with zf.open(info) as fh:
            while pos < size:
                chunk = fh.read(min(_CHUNK, size - pos))
                if not chunk:
                    break
                view[pos : pos + len(chunk)] = chunk
                h.update(chunk)
                pos += len(chunk)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError) as err:
        raise corrupt(path, f"member {name!r} ({what}) cannot be read ({err})") from None
    expect(pos == size, path, f"member {name!r} ({what}) is truncated")
    expect(h.hexdigest() == sha, path, f"member {name!r} ({what}) fails its SHA-256 checksum")
    return buf


def write_signatures(path: str, signatures: list[dict[str, Any]]) -> None:
    """Rewrite the file at ``path`` (atomically) with ``signatures`` as its signature record;
    every other member is copied byte for byte."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".relaykit-sign-", dir=directory)
    try:
        with (
            open_container(path) as src,
            os.fdopen(fd, "wb") as fh,
            zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as dst,
        ):
            for info in src.infolist():
                if info.filename == SIGNATURES:
                    continue
                with src.open(info) as r, dst.open(info.filename, "w", force_zip64=True) as w:
                    while chunk := r.read(_CHUNK):
                        w.write(chunk)
            doc = {"format": "relaykit.signatures", "version": 1, "signatures": signatures}
            dst.writestr(SIGNATURES, json.dumps(doc, sort_keys=True).encode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
