"""``tvm.relay.op.contrib.te_target``: not in relaykit.

In TVM: TVM's TE-target BYOC helper. The module imports so that scripts naming it load;
each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError` when
used.
"""

from relaykit.relay._facade import SCHEDULES, module_getattr, unsupported

_NAMES: list[str] = [
    "lower_composite", "relay_to_runtime",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, SCHEDULES))
__getattr__ = module_getattr(__name__, SCHEDULES)
