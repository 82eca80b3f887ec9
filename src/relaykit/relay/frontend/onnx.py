"""``tvm.relay.frontend.onnx``: :mod:`relaykit.frontend.onnx` under TVM's module path."""

import relaykit.frontend.onnx as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
