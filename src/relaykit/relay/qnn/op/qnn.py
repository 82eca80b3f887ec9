"""``tvm.relay.qnn.op.qnn``: :mod:`relaykit.op.qnn` under TVM's module path."""

import relaykit.op.qnn as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
