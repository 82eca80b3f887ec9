"""``tvm.relay.op.op``: :mod:`relaykit.op.op` under TVM's module path."""

import relaykit.op.op as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
