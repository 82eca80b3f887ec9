"""``tvm.relay.frontend.tensorflow``: not in relaykit.

In TVM: TVM's tensorflow importer. The module imports so that scripts naming it load;
each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError` when
used.
"""

from relaykit.relay._facade import FRAMEWORK, module_getattr, unsupported

_NAMES: list[str] = [
    "from_tensorflow",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, FRAMEWORK))
__getattr__ = module_getattr(__name__, FRAMEWORK)
