"""Automatic quantization (TVM's ``relay.quantize``): a float model to int8 arithmetic.

One module per stage: :mod:`.config` (``qconfig``), :mod:`.partition`, :mod:`.annotate`,
:mod:`.calibrate` (with :mod:`.kl_divergence`), :mod:`.realize`, :mod:`.conversions`
(``partition_conversions``), :mod:`.pipeline` (``quantize``), over the rewriting
engine :mod:`.rewrite`; :mod:`.calibration_data` is ``relay.analysis.get_calibration_data``.
Each stage's pass (TVM's ``relay.quantize.partition()`` and so on) is a function of its
module (``relaykit.quantize.realize.realize``); the package keeps the module names free.
Calibration runs the model, so this package sits above execution.

>>> with qconfig(calibrate_mode="global_scale", global_scale=8.0):
...     current_qconfig().global_scale
8.0
"""

from .annotate import QAnnotateExpr, attach_simulated_quantize, register_annotate_function
from .calibrate import collect_stats
from .calibration_data import get_calibration_data
from .config import QAnnotateKind, QConfig, current_qconfig, kind2str, qconfig
from .context import QuantizeContext, quantize_context
from .conversions import partition_conversions
from .kl_divergence import find_scale_by_kl
from .partition import QPartitionExpr, register_partition_function
from .pipeline import prerequisite_optimize, quantize
from .realize import QRealizeIntExpr

__all__ = [
    "QAnnotateExpr",
    "QAnnotateKind",
    "QConfig",
    "QPartitionExpr",
    "QRealizeIntExpr",
    "QuantizeContext",
    "attach_simulated_quantize",
    "collect_stats",
    "current_qconfig",
    "find_scale_by_kl",
    "get_calibration_data",
    "kind2str",
    "partition_conversions",
    "prerequisite_optimize",
    "qconfig",
    "quantize",
    "quantize_context",
    "register_annotate_function",
    "register_partition_function",
]
