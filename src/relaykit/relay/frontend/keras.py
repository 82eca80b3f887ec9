"""``tvm.relay.frontend.keras``: :mod:`relaykit.frontend.keras` under TVM's module path."""

import relaykit.frontend.keras as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
