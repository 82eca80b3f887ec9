"""``tvm.relay.frontend.tensorflow_ops``: not in relaykit.

In TVM: TVM's tensorflow_ops importer. The module imports so that scripts naming it
load; each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError`
when used.
"""

from relaykit.relay._facade import FRAMEWORK, module_getattr, unsupported

_NAMES: list[str] = [
    "check_symbolic_shape", "convert_combined_nms_with_all_class_nms", "count_all_indices",
    "list_shape_of", "row_wise_divide",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, FRAMEWORK))
__getattr__ = module_getattr(__name__, FRAMEWORK)
