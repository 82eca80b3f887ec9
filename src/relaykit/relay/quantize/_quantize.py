"""TVM's ``relay.quantize._quantize`` (its FFI functions): the simulated-quantize
constructor, the passes and the stats collector."""

from relaykit.op.relay.quantize import simulated_quantize
from relaykit.quantize.annotate import annotate as QuantizeAnnotate
from relaykit.quantize.calibrate import create_stats_collector as CreateStatsCollector
from relaykit.quantize.partition import partition as QuantizePartition
from relaykit.quantize.realize import realize as QuantizeRealize

__all__ = [
    "CreateStatsCollector",
    "QuantizeAnnotate",
    "QuantizePartition",
    "QuantizeRealize",
    "simulated_quantize",
]
