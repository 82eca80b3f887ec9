"""Ed25519 signatures of module files: who wrote this model?

The integrity digest of a module file (:mod:`relaykit.runtime.archive`) says that
nothing changed by accident; anyone who can rewrite the file can also recompute it.
A signature says who vouches for the file: ``sign_artifact`` signs the artifact
digest (which covers the manifest, every member and so every byte that steers
loading) with an Ed25519 private key and stores the signature in the file;
``load_module(path, trusted_keys=[...])`` refuses the file unless one of its
signatures verifies with one of the trusted public keys.

Keys are PEM files (PKCS#8 private key, SubjectPublicKeyInfo public key) made by
:func:`generate_keypair` or by ``openssl genpkey -algorithm ed25519``. Signing needs
the ``cryptography`` package: ``pip install relaykit[sign]``.

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> key_id = generate_keypair(os.path.join(d, "k.pem"), os.path.join(d, "k.pub"))  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Sequence
from typing import Any, cast

from relaykit.errors import (
    ArgumentError,
    ArtifactError,
    ArtifactSignatureError,
    MissingDependencyError,
)

from .archive import (
    Sealed,
    check_member_names,
    open_container,
    parse_json,
    read_member,
    read_sealed,
    write_signatures,
)

__all__ = [
    "ALGORITHM",
    "generate_keypair",
    "sign_artifact",
    "verify_signatures",
    "verified_digest",
    "verify_artifact",
    "key_id",
    "TrustedKey",
]

ALGORITHM = "ed25519"
_CONTEXT = b"relaykit module signature v1\n"
_INSTALL = "pip install relaykit[sign]  (installs cryptography==48.0.0)"

#: A trusted public key: a path to a PEM file, PEM bytes, or a ``cryptography``
#: ``Ed25519PublicKey``.
TrustedKey = Any


def _crypto() -> tuple[Any, Any]:
    """The ``cryptography`` Ed25519 and serialization modules, or a typed error naming the
    extra."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise MissingDependencyError(
            f"signing and verifying module files needs the cryptography package: {_INSTALL}"
        ) from None
    return ed25519, serialization


def _invalid_signature() -> type[Exception]:
    from cryptography.exceptions import InvalidSignature

    return InvalidSignature


def _message(digest: str) -> bytes:
    return _CONTEXT + digest.encode("ascii")


def key_id(public_key: Any) -> str:
    """A short name of an Ed25519 public key: the first 16 hex digits of the SHA-256 of its
    32 raw bytes."""
    _, serialization = _crypto()
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def _read(path: str | os.PathLike[str], what: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(1 << 16)
    except OSError as err:
        where = os.fspath(path)
        raise ArtifactError(f"cannot read the {what} {where!r}: {err.strerror or err}") from None


def _private_key(path: str | os.PathLike[str]) -> Any:
    ed25519, serialization = _crypto()
    data = _read(path, "private key")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as err:
        raise ArtifactSignatureError(
            f"{os.fspath(path)!r} is not an unencrypted PEM private key ({err}); make one with "
            "`relaykit keygen PRIVATE PUBLIC`"
        ) from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise ArtifactSignatureError(
            f"{os.fspath(path)!r} holds a {type(key).__name__}; relaykit signs with Ed25519 keys "
            "(`relaykit keygen PRIVATE PUBLIC`)"
        )
    return key


def _public_key(key: TrustedKey) -> Any:
    ed25519, serialization = _crypto()
    if isinstance(key, ed25519.Ed25519PublicKey):
        return key
    if isinstance(key, bytes):
        data, where = key, "a trusted key given as bytes"
    elif isinstance(key, (str, os.PathLike)):
        data, where = _read(key, "trusted public key"), repr(os.fspath(key))
    else:
        raise ArgumentError(
            f"trusted_keys holds {type(key).__name__}; give paths of PEM public keys, PEM bytes "
            "or Ed25519PublicKey objects"
        )
    try:
        pub = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as err:
        raise ArtifactSignatureError(f"{where} is not a PEM public key ({err})") from None
    if not isinstance(pub, ed25519.Ed25519PublicKey):
        raise ArtifactSignatureError(f"{where} is a {type(pub).__name__}, not an Ed25519 key")
    return pub


def generate_keypair(
    private_path: str | os.PathLike[str], public_path: str | os.PathLike[str]
) -> str:
    """Write a new Ed25519 key pair: the private key (PKCS#8 PEM, unencrypted, mode 0600;
    an existing file is never overwritten) and the public key (PEM). Returns its key id."""
    ed25519, serialization = _crypto()
    key = ed25519.Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    for p in (private_path, public_path):
        if os.path.exists(p):
            raise ArtifactError(f"{os.fspath(p)!r} exists; refusing to overwrite a key file")
    try:
        fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(private_pem)
        with open(public_path, "xb") as fh:
            fh.write(public_pem)
    except OSError as err:
        raise ArtifactError(f"cannot write the key pair: {err.strerror or err}") from None
    return key_id(key.public_key())


def verified_digest(path: str | os.PathLike[str]) -> str:
    """The artifact digest of the file at ``path``, after checking the manifest against it
    and every member against the manifest (no module is rebuilt)."""
    path = os.fspath(path)
    with open_container(path) as zf:
        sealed = read_sealed(zf, path)
        manifest = parse_json(sealed.manifest, path, "the manifest")
        members = manifest.get("members") if isinstance(manifest, dict) else None
        check_member_names(zf, path, members)
        for name, rec in cast(dict[str, Any], members).items():
            read_member(zf, path, name, rec, "a member")
        return sealed.digest


def sign_artifact(path: str | os.PathLike[str], private_key_path: str | os.PathLike[str]) -> str:
    """Sign the module file at ``path`` with the Ed25519 key in ``private_key_path``.

    The whole file is checked first (a damaged file is never signed). The signature
    covers the artifact digest and is stored in the file, replacing an earlier signature
    by the same key and keeping those of other keys. Returns the signing key's id.
    """
    path = os.fspath(path)
    key = _private_key(private_key_path)
    digest = verified_digest(path)
    kid = key_id(key.public_key())
    with open_container(path) as zf:
        old = read_sealed(zf, path).signatures
    record = {
        "algorithm": ALGORITHM,
        "key_id": kid,
        "digest": digest,
        "signature": base64.b64encode(key.sign(_message(digest))).decode("ascii"),
    }
    write_signatures(path, [s for s in old if s.get("key_id") != kid] + [record])
    return kid


def _verify_one(pub: Any, rec: dict[str, Any], digest: str) -> bool:
    try:
        sig = base64.b64decode(str(rec.get("signature", "")), validate=True)
        pub.verify(sig, _message(digest))
    except (binascii.Error, ValueError, _invalid_signature()):
        return False
    return True


def verify_signatures(path: str, sealed: Sealed, trusted_keys: Sequence[TrustedKey]) -> str:
    """The id of a trusted key whose signature of ``sealed.digest`` verifies; else
    :class:`~relaykit.errors.ArtifactSignatureError` saying why the file is refused."""
    if isinstance(trusted_keys, (str, bytes, os.PathLike)):
        trusted_keys = [trusted_keys]
    keys = {key_id(k): k for k in (_public_key(t) for t in trusted_keys)}
    if not keys:
        raise ArtifactSignatureError(
            f"cannot load {path!r}: trusted_keys is empty, so no signature can be trusted; "
            "pass the public keys you trust, or trusted_keys=None to skip the check"
        )
    trusted = ", ".join(sorted(keys))
    if not sealed.signatures:
        raise ArtifactSignatureError(
            f"refusing {path!r}: it is not signed, and trusted keys ({trusted}) were required. "
            "Ask its author for a signed copy (`relaykit sign FILE --key PRIVATE`)"
        )
    seen = []
    for rec in sealed.signatures:
        kid = str(rec.get("key_id", "?"))
        seen.append(kid)
        pub = keys.get(kid)
        if pub is None or rec.get("algorithm") != ALGORITHM:
            continue
        if rec.get("digest") == sealed.digest and _verify_one(pub, rec, sealed.digest):
            return kid
        raise ArtifactSignatureError(
            f"refusing {path!r}: its signature by trusted key {kid} does not verify; the file "
            "was changed after it was signed (or the signature was forged)"
        )
    raise ArtifactSignatureError(
        f"refusing {path!r}: it is signed by {', '.join(seen)}, none of them a trusted key "
        f"({trusted})"
    )


def verify_artifact(
    path: str | os.PathLike[str], trusted_keys: Sequence[TrustedKey] | None = None
) -> tuple[str, str | None]:
    """Check the whole file at ``path`` without loading it: the manifest against the
    digest, every member against the manifest and, with ``trusted_keys``, the signature.
    Returns the artifact digest and the id of the trusted key that signed it (or None)."""
    digest = verified_digest(path)
    if trusted_keys is None:
        return digest, None
    name = os.fspath(path)
    with open_container(name) as zf:
        sealed = read_sealed(zf, name)
    return digest, verify_signatures(name, sealed, trusted_keys)
