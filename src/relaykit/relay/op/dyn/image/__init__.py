"""``tvm.relay.op.dyn.image``: :mod:`relaykit.op.dyn.image` under TVM's module path."""

import relaykit.op.dyn.image as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
