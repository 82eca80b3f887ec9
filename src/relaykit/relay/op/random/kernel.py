"""``tvm.relay.op.random.kernel``: :mod:`relaykit.op.random` under TVM's module path."""

import relaykit.op.random as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
