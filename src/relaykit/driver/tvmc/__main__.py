"""``python -m relaykit.driver.tvmc``: the tvmc command line."""

import sys

from .main import main

if __name__ == "__main__":  # not when a tool (pytest's doctest collection) imports it
    sys.exit(main())
