"""``tvm.relay.op.tensor``: :mod:`relaykit.op.tensor` under TVM's module path."""

import relaykit.op.tensor as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
