"""``tvm.relay.op.image``: :mod:`relaykit.op.image` under TVM's module path."""

import relaykit.op.image as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
