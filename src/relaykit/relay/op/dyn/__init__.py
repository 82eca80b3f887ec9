"""``tvm.relay.op.dyn``: :mod:`relaykit.op.dyn` under TVM's module path."""

import relaykit.op.dyn as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
