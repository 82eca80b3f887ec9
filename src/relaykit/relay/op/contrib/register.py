"""``tvm.relay.op.contrib.register``: :mod:`relaykit.op.contrib.register`, by TVM's path."""

import relaykit.op.contrib.register as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
