"""``tvm.relay.op.dyn.nn``: :mod:`relaykit.op.dyn.nn` under TVM's module path."""

import relaykit.op.dyn.nn as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
