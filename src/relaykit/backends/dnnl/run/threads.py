"""How many threads oneDNN uses: its share of the process's thread policy.

The oneDNN wheel is the GNU OpenMP build, so the count is the OpenMP thread
count the runtime sets before building and before running a region. In order
of precedence: the ``num_threads`` argument (of ``relay.build``'s dnnl
options, ``DnnlModule`` or ``DnnlRegion``), the ``"relay.num_threads"``
option of the current ``PassContext``, then the process's budget
(:func:`relaykit.runtime.threads.set_num_threads`, ``RELAYKIT_NUM_THREADS``,
every core this process may run on) as :mod:`relaykit.runtime.threads`
shares it out. Creating a region tells the policy that an OpenMP pool lives
in the process, which drops NumPy's BLAS to one thread (docs/threads.md).

>>> resolve_num_threads(3)
3
>>> resolve_num_threads(None) >= 1
True
"""

from __future__ import annotations

from relaykit.runtime.threads import CONFIG_KEY, ENV_VAR, check_count, get_policy
from relaykit.transform.pass_infra import PassContext

__all__ = ["resolve_num_threads", "ENV_VAR"]


def resolve_num_threads(num_threads: int | None = None) -> int:
    """The OpenMP thread count of one region (see the module docstring)."""
    if num_threads is None:
        configured = PassContext.current().config.get(CONFIG_KEY)
        if configured is not None:
            num_threads = check_count(configured, f"PassContext config {CONFIG_KEY!r}")
    return get_policy().openmp_threads(num_threads)
