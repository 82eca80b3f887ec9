"""``tvm.relay.op.annotation``: :mod:`relaykit.op.annotation` under TVM's module path."""

import relaykit.op.annotation as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
