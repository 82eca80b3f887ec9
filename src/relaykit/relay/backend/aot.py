"""``tvm.relay.backend.aot``: not in relaykit.

In TVM: the AOT executor's passes. The module imports so that scripts naming it load;
each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError` when
used.
"""

from relaykit.relay._facade import NOT_YET, module_getattr, unsupported

_NAMES: list[str] = [
    "AOTLowerMain", "CreateExecutorMetadata", "CreateFunctionMetadata",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
