"""``tvm.relay.op.reduce``: :mod:`relaykit.op.reduce` under TVM's module path."""

import relaykit.op.reduce as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
