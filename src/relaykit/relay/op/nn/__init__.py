"""``tvm.relay.op.nn``: :mod:`relaykit.op.nn` under TVM's module path."""

import relaykit.op.nn as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
