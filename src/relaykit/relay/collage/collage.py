"""``tvm.relay.collage.collage``: the module TVM's ``relay.collage`` names come from.

``MockCostEstimator`` (TVM's deterministic cost source, which makes
``relay.transform.CollagePartition`` search sub-graphs as TVM does) and ``CostEstimator``
(measured here: :class:`relaykit.tuning.MeasuredCost`) are relaykit's; TVM's other names
(its measuring helpers and the hooks its C++ search calls back) raise
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import AUTOTUNING, module_getattr, unsupported
from relaykit.tuning import MeasuredCost, MockCostEstimator

#: TVM's ``CostEstimator`` measures; relaykit's measured cost source stands in.
CostEstimator = MeasuredCost

_NAMES: list[str] = [
    "CustomCostEstimator", "MEASURE_NUMBER", "MEASURE_REPEAT", "WARMUP_MIN_REPEAT_MS",
    "arg_for", "estimate_seconds", "make_byoc_partition_rule",
    "make_labelled_dfpattern_partition_rule_wrapper", "vm_estimate_seconds",
]  # fmt: skip

__all__ = ["CostEstimator", "MockCostEstimator", *_NAMES]
globals().update(unsupported(__name__, _NAMES, AUTOTUNING))
__getattr__ = module_getattr(__name__, AUTOTUNING)
