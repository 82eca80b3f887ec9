"""``tvm.relay.frontend.pytorch``: :mod:`relaykit.frontend.pytorch` under TVM's module path."""

import relaykit.frontend.pytorch as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
