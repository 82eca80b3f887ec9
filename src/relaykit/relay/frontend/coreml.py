"""``tvm.relay.frontend.coreml``: :mod:`relaykit.frontend.coreml` under TVM's module path."""

import relaykit.frontend.coreml as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
