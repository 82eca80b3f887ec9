"""``tvm.relay.op``: the operators (:mod:`relaykit.op`) under TVM's module paths."""

import relaykit.op as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
