"""``python -m relaykit.cli``: the ``relaykit`` command."""

import sys

from relaykit.cli import main

if __name__ == "__main__":  # not when a tool (pytest's doctest collection) imports it
    sys.exit(main())
