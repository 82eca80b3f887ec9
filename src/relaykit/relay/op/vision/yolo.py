"""``tvm.relay.op.vision.yolo``: :mod:`relaykit.op.vision` under TVM's module path."""

import relaykit.op.vision as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
