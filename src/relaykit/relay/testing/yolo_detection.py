"""``tvm.relay.testing.yolo_detection``: not in relaykit.

In TVM: TVM's yolo_detection test helpers. The module imports so that scripts naming it
load; each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError`
when used.
"""

from relaykit.relay._facade import FRAMEWORK, module_getattr, unsupported

_NAMES: list[str] = [
    "Box", "do_nms_sort", "draw_detections", "fill_network_boxes", "get_detections",
    "nms_comparator", "show_detections",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, FRAMEWORK))
__getattr__ = module_getattr(__name__, FRAMEWORK)
