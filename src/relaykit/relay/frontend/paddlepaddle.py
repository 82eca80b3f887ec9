"""``tvm.relay.frontend.paddlepaddle``: :mod:`relaykit.frontend.paddle` under TVM's module path."""

import relaykit.frontend.paddle as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
