"""``tvm.relay.frontend.tflite_flexbuffer``: :mod:`relaykit.frontend.tflite.flexbuffer`
under TVM's module path."""

import relaykit.frontend.tflite.flexbuffer as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
