"""``relaykit keygen``, ``relaykit sign`` and ``relaykit verify``: Ed25519 signatures of
model files (see docs/artifacts.md and :mod:`relaykit.runtime.signing`)."""

from __future__ import annotations

import argparse

from relaykit.cli._common import SubParsers, add_file_limit, check_file
from relaykit.runtime.signing import generate_keypair, sign_artifact, verify_artifact

__all__ = ["register", "run_keygen", "run_sign", "run_verify"]

EPILOG = """\
examples:
  relaykit keygen release.pem release.pub
  relaykit sign model.rkmod --key release.pem
  relaykit verify model.rkmod --trusted-key release.pub
"""


def register(sub: SubParsers) -> None:
    keygen = sub.add_parser(
        "keygen",
        help="make an Ed25519 key pair for signing model files",
        description=(
            "Write a new Ed25519 key pair: PRIVATE (PEM, mode 0600; keep it secret) signs "
            "model files, PUBLIC (PEM) is what users pass to load_module(trusted_keys=...). "
            "Existing files are never overwritten. Needs: pip install relaykit[sign]."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    keygen.add_argument("private", metavar="PRIVATE", help="where to write the private key")
    keygen.add_argument("public", metavar="PUBLIC", help="where to write the public key")
    keygen.set_defaults(func=run_keygen)

    sign = sub.add_parser(
        "sign",
        help="sign a model file written by export_library",
        description=(
            "Check FILE completely, then store in it an Ed25519 signature of its digest (which "
            "covers every byte that steers loading). A file can carry signatures by several "
            "keys; signing again with the same key replaces its signature."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sign.add_argument("file", metavar="FILE", help="the model file (export_library's output)")
    sign.add_argument("--key", required=True, metavar="PRIVATE", help="the private key (PEM)")
    add_file_limit(sign)
    sign.set_defaults(func=run_sign)

    verify = sub.add_parser(
        "verify",
        help="check a model file's integrity (and signature) without loading it",
        description=(
            "Check FILE's manifest against its digest and every member against the manifest; "
            "with --trusted-key, also that one of the given keys signed it. Nothing in the "
            "file is loaded or run."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verify.add_argument("file", metavar="FILE", help="the model file")
    verify.add_argument(
        "--trusted-key",
        action="append",
        metavar="PUBLIC",
        help="a trusted public key (PEM); repeat for several",
    )
    add_file_limit(verify)
    verify.set_defaults(func=run_verify)


def run_keygen(args: argparse.Namespace) -> int:
    kid = generate_keypair(args.private, args.public)
    print(f"wrote {args.private} (private, keep it secret) and {args.public} (key id {kid})")
    return 0


def run_sign(args: argparse.Namespace) -> int:
    check_file(args.file, "model file", args.max_file_size)
    check_file(args.key, "private key", 1 << 16)
    kid = sign_artifact(args.file, args.key)
    print(f"signed {args.file} with key {kid}")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    check_file(args.file, "model file", args.max_file_size)
    for key in args.trusted_key or ():
        check_file(key, "public key", 1 << 16)
    digest, kid = verify_artifact(args.file, args.trusted_key)
    signed = f"; signed by trusted key {kid}" if kid else ""
    print(f"{args.file}: intact ({digest}){signed}")
    return 0
