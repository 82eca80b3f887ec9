"""``python -m relaykit.driver.tvmc``: the tvmc command line."""

import sys

from .main import main

sys.exit(main())
