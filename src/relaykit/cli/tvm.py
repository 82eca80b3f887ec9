"""``relaykit tvm SCRIPT [ARGS...]``: run a TVM script unchanged, ``import tvm`` being relaykit."""

from __future__ import annotations

import argparse

from relaykit.cli._common import SubParsers
from relaykit.cli._files import add_file_limit, check_file
from relaykit.tvm import run_script

__all__ = ["register", "run"]

EPILOG = """\
examples:
  relaykit tvm relay_quick_start.py
  relaykit tvm from_onnx.py --model resnet18.onnx   # arguments after the script are its own
"""


def register(sub: SubParsers) -> None:
    parser = sub.add_parser(
        "tvm",
        help="run a TVM script with `import tvm` resolving to relaykit",
        description=(
            "Run a Python script written for TVM's Relay as it is: `import tvm`, "
            "`from tvm import relay`, `from tvm.contrib import graph_executor` ... resolve to "
            "relaykit's modules (the alias relaykit.use_as_tvm() installs). Same as "
            "`python -m relaykit.tvm SCRIPT`."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_file_limit(parser)
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    script = check_file(args.script, "script", args.max_file_size)
    run_script(str(script), args.script_args)
    return 0
