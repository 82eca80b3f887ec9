"""``tvm.relay.op.transform``: :mod:`relaykit.op.transform` under TVM's module path."""

import relaykit.op.transform as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
