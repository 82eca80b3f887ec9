"""``python -m relaykit.cli``: the ``relaykit`` command."""

import sys

from relaykit.cli import main

sys.exit(main())
