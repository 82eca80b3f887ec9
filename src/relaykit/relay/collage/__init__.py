"""``tvm.relay.collage``: measured placement across backends (:mod:`relaykit.tuning`).

``MockCostEstimator`` is TVM's deterministic cost source; relaykit's measured one is
:class:`relaykit.tuning.MeasuredCost`. TVM's remaining names here (its measuring
helpers, run through TVM's own runtime) raise
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import AUTOTUNING, module_getattr, unsupported
from relaykit.tuning import MeasuredCost, MockCostEstimator

#: TVM's ``CustomCostEstimator``/``CostEstimator`` are measured costs here.
CostEstimator = MeasuredCost

_NAMES: list[str] = [
    "CustomCostEstimator", "MEASURE_NUMBER", "MEASURE_REPEAT", "WARMUP_MIN_REPEAT_MS",
]  # fmt: skip

__all__ = ["CostEstimator", "MockCostEstimator", *_NAMES]
globals().update(unsupported(__name__, _NAMES, AUTOTUNING))
__getattr__ = module_getattr(__name__, AUTOTUNING)
