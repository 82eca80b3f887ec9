"""TVM's ``relay.quantize._partition_conversions``."""

from relaykit.quantize.conversions import ALLOWED_CONVERSION_OPS, partition_conversions

__all__ = ["ALLOWED_CONVERSION_OPS", "partition_conversions"]
