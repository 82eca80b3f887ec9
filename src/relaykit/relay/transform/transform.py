"""``tvm.relay.transform.transform``: the passes (:mod:`relaykit.transform`) under
TVM's module path."""

import relaykit.transform as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
