"""``tvm.relay.op.contrib.dnnl``: the oneDNN backend's TVM API (``partition_for_dnnl``,
its pattern table...), as the backend's record exports it.

>>> from relaykit.relay.op.contrib.dnnl import partition_for_dnnl
>>> partition_for_dnnl.__module__
'relaykit.backends.dnnl.partition'
"""

import relaykit.op.contrib as _contrib
from relaykit.relay._facade import forward

# the module is made on first use, from the backend record (see relaykit.op.contrib)
__all__, __getattr__, __dir__ = forward(getattr(_contrib, "dnnl"))  # noqa: B009
