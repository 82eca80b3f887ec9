"""``tvm.relay.qnn.op.layout_conversions``: not in relaykit.

In TVM: QNN's layout conversions. The module imports so that scripts naming it load;
each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError` when
used.
"""

from relaykit.relay._facade import NOT_YET, module_getattr, unsupported

_NAMES: list[str] = [
    "convert_qnn_avg_pool2d", "convert_qnn_conv2d", "convert_qnn_conv2d_transpose",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
