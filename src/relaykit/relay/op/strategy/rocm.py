"""``tvm.relay.op.strategy.rocm``: not in relaykit.

In TVM: TVM's rocm operator strategies. The module imports so that scripts naming it
load; each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError`
when used.
"""

from relaykit.relay._facade import SCHEDULES, module_getattr, unsupported

from .generic import _NAMES as _GENERIC  # TVM's module re-exports generic's names

_NAMES: list[str] = [
    *_GENERIC,
    "argsort_strategy_cuda",
    "batch_matmul_strategy_rocm",
    "conv2d_strategy_rocm",
    "dense_strategy_rocm",
    "log_softmax_strategy_rocm",
    "scatter_elements_cuda",
    "softmax_strategy_rocm",
    "sort_strategy_cuda",
    "topk_strategy_cuda",
]

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, SCHEDULES))
__getattr__ = module_getattr(__name__, SCHEDULES)
