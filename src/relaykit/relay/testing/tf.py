"""``tvm.relay.testing.tf``: not in relaykit.

In TVM: TVM's tf test helpers. The module imports so that scripts naming it load; each
of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import FRAMEWORK, module_getattr, unsupported

_NAMES: list[str] = [
    "AddShapesToGraphDef", "NodeLookup", "PTBSmallConfig", "ProcessGraphDefParam",
    "convert_to_list", "do_tf_sample", "get_config", "get_workload",
    "get_workload_official", "get_workload_ptb", "pick_from_weight", "vmobj_to_list",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, FRAMEWORK))
__getattr__ = module_getattr(__name__, FRAMEWORK)
