"""How many threads oneDNN uses: all cores, unless told otherwise.

The oneDNN wheel is the GNU OpenMP build, so the count is the OpenMP thread
count the runtime sets before building and before running a region. In order
of precedence: the ``num_threads`` argument (of ``relay.build``'s dnnl
options, ``DnnlModule`` or ``DnnlRegion``), the ``RELAYKIT_NUM_THREADS``
environment variable, then every core this process may run on.

>>> resolve_num_threads(3)
3
>>> resolve_num_threads(None) >= 1
True
"""

from __future__ import annotations

import os

from relaykit.errors import RelayKitError

__all__ = ["resolve_num_threads", "ENV_VAR"]

ENV_VAR = "RELAYKIT_NUM_THREADS"


def _available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_num_threads(num_threads: int | None = None) -> int:
    """The thread count to use (see the module docstring)."""
    if num_threads is not None:
        if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
            raise RelayKitError(f"num_threads must be a positive integer, got {num_threads!r}")
        return num_threads
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        try:
            value = int(env)
        except ValueError:
            value = 0
        if value < 1:
            raise RelayKitError(f"{ENV_VAR} must be a positive integer, got {env!r}")
        return value
    return _available_cores()
