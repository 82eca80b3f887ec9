"""``tvm.relay.transform.mixed_precision``: ToMixedPrecision's operator lists
(:mod:`relaykit.transform.mixed_precision`)."""

import relaykit.transform.mixed_precision as _impl
from relaykit.relay._facade import forward

__all__, __getattr__, __dir__ = forward(_impl)
