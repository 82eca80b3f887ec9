"""``tvm.relay.op.contrib.clml``: not in relaykit.

In TVM: TVM's clml BYOC integration (an accelerator or vendor library). The module
imports so that scripts naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import GPU, module_getattr, unsupported

_NAMES: list[str] = [
    "CLMLGenSrc", "CLMLGetSubModuleSrc", "OpAttrContext", "OptimizeBatchnorm",
    "OptimizeBatchnormPass", "RemoveDropout", "RemoveDropoutPass", "clml_pattern_table",
    "clml_sdk_version", "is_clml_runtime_enabled", "partition_for_clml",
    "preprocess_for_clml", "preprocess_module",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, GPU))
__getattr__ = module_getattr(__name__, GPU)
