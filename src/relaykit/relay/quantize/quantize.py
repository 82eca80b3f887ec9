"""TVM's ``relay.quantize.quantize`` module: the configuration and the passes."""

from relaykit.quantize import (
    QAnnotateKind,
    QConfig,
    QuantizeContext,
    annotate,
    calibrate,
    current_qconfig,
    kind2str,
    partition,
    partition_conversions,
    prerequisite_optimize,
    qconfig,
    quantize,
    quantize_context,
    realize,
)
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
