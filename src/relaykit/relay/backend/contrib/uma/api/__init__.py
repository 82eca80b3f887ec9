"""``tvm.relay.backend.contrib.uma.api``: not in relaykit.

In TVM: UMA, TVM's accelerator integration API. The module imports so that scripts
naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import GPU, module_getattr, unsupported

_NAMES: list[str] = [
    "UMACodegen", "UMALower", "UMAPartitioner",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, GPU))
__getattr__ = module_getattr(__name__, GPU)
