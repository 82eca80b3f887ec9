"""``tvm.relay.collage``: not in relaykit.

In TVM: Collage partitioning (a tuning-based search). The module imports so that scripts
naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import AUTOTUNING, module_getattr, unsupported

_NAMES: list[str] = [
    "CostEstimator", "CustomCostEstimator", "MEASURE_NUMBER", "MEASURE_REPEAT",
    "MockCostEstimator", "WARMUP_MIN_REPEAT_MS",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, AUTOTUNING))
__getattr__ = module_getattr(__name__, AUTOTUNING)
