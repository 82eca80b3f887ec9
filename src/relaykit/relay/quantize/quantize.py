"""``tvm.relay.quantize.quantize``: not in relaykit.

In TVM: automatic quantization (relay.quantize). The module imports so that scripts
naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import NOT_YET, module_getattr, unsupported

_NAMES: list[str] = [
    "QAnnotateKind", "QConfig", "QuantizeContext", "annotate", "current_qconfig",
    "kind2str", "partition", "prerequisite_optimize", "qconfig", "quantize",
    "quantize_context", "realize",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
