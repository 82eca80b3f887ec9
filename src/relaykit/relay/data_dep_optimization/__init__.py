"""``tvm.relay.data_dep_optimization``: data-dependent (sparse) optimizations.

``bsr_conv2d`` / ``bsr_dense`` convert sparse convolutions / dense layers to
``nn.sparse_conv2d`` / ``nn.sparse_dense``. TVM's ``simplify_fc_transpose`` imports, and
raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import NOT_YET, module_getattr, unsupported

from . import bsr_conv2d, bsr_dense

_NAMES: list[str] = [
    "simplify_fc_transpose",
]  # fmt: skip

__all__ = ["bsr_conv2d", "bsr_dense", *_NAMES]
globals().update(unsupported(__name__, _NAMES, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
