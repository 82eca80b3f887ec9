"""TVM's ``relay.quantize.quantize`` module: the configuration and the passes."""

from relaykit.quantize import (
    QAnnotateKind,
    QConfig,
    QuantizeContext,
    current_qconfig,
    kind2str,
    partition_conversions,
    prerequisite_optimize,
    qconfig,
    quantize,
    quantize_context,
)
from relaykit.quantize.annotate import annotate
from relaykit.quantize.calibrate import calibrate
from relaykit.quantize.partition import partition
from relaykit.quantize.realize import realize
from relaykit.quantize.rewrite import forward_op as _forward_op  # noqa: F401 - TVM's helper

__all__ = [
    "QAnnotateKind",
    "QConfig",
    "QuantizeContext",
    "annotate",
    "calibrate",
    "current_qconfig",
    "kind2str",
    "partition",
    "partition_conversions",
    "prerequisite_optimize",
    "qconfig",
    "quantize",
    "quantize_context",
    "realize",
]
