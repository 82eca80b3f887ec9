"""``tvm.relay.frontend.tensorflow``: :mod:`relaykit.frontend.tensorflow` under TVM's
module path."""

import relaykit.frontend.tensorflow as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
