"""``tvm.relay.op._make``: :mod:`relaykit.op._make` under TVM's module path."""

import relaykit.op._make as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
