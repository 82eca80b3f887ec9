"""``tvm.relay.analysis.call_graph``: the call graph of a module's global functions
(:mod:`relaykit.transform.call_graph`)."""

import relaykit.transform.call_graph as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
