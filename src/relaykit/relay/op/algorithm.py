"""``tvm.relay.op.algorithm``: :mod:`relaykit.op.indexing` under TVM's module path."""

import relaykit.op.indexing as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
