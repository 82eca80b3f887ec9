"""``relaykit backends``: the backends relaykit knows, with status and install hints."""

from __future__ import annotations

import argparse
import json

from relaykit.backends.status import describe_all, format_table
from relaykit.cli._common import SubParsers

__all__ = ["register", "run"]

EPILOG = """\
examples:
  relaykit backends            # one line per backend: version, status, ops, patterns
  relaykit backends -v         # also the operators and patterns of each
  relaykit backends --json
"""


def register(sub: SubParsers) -> None:
    parser = sub.add_parser(
        "backends",
        help="list the backends: version, status, what each supports",
        description=(
            "List the backends relaykit knows — built in, or installed by a package that "
            "declares a 'relaykit.backends' entry point — with version, status (available, "
            "or what to install) and how many operators and patterns each supports."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="also list the operators and patterns"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rows = describe_all()
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=2))
    else:
        print(format_table(rows, verbose=args.verbose))
    return 0
