"""The ``relaykit`` command.

Subcommands (each one module of this package, listed in :data:`SUBCOMMANDS`):

- ``relaykit demo``: partition, build with a real backend, run and time, end to end;
- ``relaykit partition MODEL --target X``: partition a model and summarise the result;
- ``relaykit compile MODEL --target X -o FILE`` / ``run FILE`` / ``bench MODEL``: build
  one artifact file, run it, time it against the host path and onnxruntime;
- ``relaykit explain MODEL --target X --html FILE``: the partition drawn, and why;
- ``relaykit tune MODEL --targets X,Y --log FILE``: measured placement and its tuning log;
- ``relaykit backends``: the backends relaykit knows, their status and install hints;
- ``relaykit keygen`` / ``sign`` / ``verify``: Ed25519 signatures of model files;
- ``relaykit tvm SCRIPT [ARGS...]``: run a TVM script with ``import tvm`` as relaykit.

A subcommand module defines ``register(sub)``, which adds its parser to the
sub-parsers ``sub`` with ``set_defaults(func=run)``, and ``run(args) -> int``, the exit
status. Exit codes: 0 ok, 2 usage error, 1 failure; relaykit's typed errors are one line
on stderr, never a traceback (``--traceback`` shows one for internal errors).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from relaykit._version import __version__
from relaykit.cli import (
    backends,
    bench,
    compile,
    demo,
    explain,
    micro,
    partition,
    run,
    sign,
    tune,
    tvm,
)
from relaykit.cli._common import run_command
from relaykit.cli._models import (
    DEMO_TARGET,
    format_breakdown,
    load_model,
    op_breakdown,
    register_demo_target,
)

__all__ = [
    "main",
    "build_parser",
    "SUBCOMMANDS",
    "op_breakdown",
    "format_breakdown",
    "load_model",
    "DEMO_TARGET",
    "register_demo_target",
]

#: The subcommand modules, in the order ``relaykit --help`` lists them.
SUBCOMMANDS = (demo, partition, explain, tune, compile, run, bench, micro, backends, sign, tvm)

EPILOG = """\
examples:
  relaykit demo
  relaykit partition resnet18 --target dnnl
  relaykit explain resnet18 --target dnnl --html report.html
  relaykit backends

run 'relaykit COMMAND --help' for the options and an example of each command.
exit status: 0 ok, 1 failure, 2 usage error.
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``relaykit`` argument parser, with every subcommand of :data:`SUBCOMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="relaykit",
        description="relaykit: partition models for backends (BYOC), build, run and compare.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"relaykit {__version__}")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="print the full Python traceback of an internal error",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``relaykit`` with ``argv`` (default: the process's arguments); the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version (0) and usage errors (2)
        code = stop.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    return run_command(args.func, args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
