"""``tvm.relay.data_dep_optimization``: data-dependent (sparse) optimizations.

``bsr_conv2d`` converts sparse convolutions to ``nn.sparse_conv2d``. The rest of TVM's
names here (``bsr_dense``, ``simplify_fc_transpose``) import, and raise
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import NOT_YET, module_getattr, unsupported

from . import bsr_conv2d

_NAMES: list[str] = [
    "bsr_dense", "simplify_fc_transpose",
]  # fmt: skip

__all__ = ["bsr_conv2d", *_NAMES]
globals().update(unsupported(__name__, _NAMES, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
