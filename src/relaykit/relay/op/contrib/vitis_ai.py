"""``tvm.relay.op.contrib.vitis_ai``: not in relaykit.

In TVM: TVM's vitis_ai BYOC integration (an accelerator or vendor library). The module
imports so that scripts naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import GPU, module_getattr, unsupported

_NAMES: list[str] = [
    "VitisAIAnnotationPass", "annotation", "enabled", "partition_for_vitis_ai", "pyxir",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, GPU))
__getattr__ = module_getattr(__name__, GPU)
