"""``tvm.relay.frontend.tflite``: :mod:`relaykit.frontend.tflite` under TVM's module path."""

import relaykit.frontend.tflite as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
