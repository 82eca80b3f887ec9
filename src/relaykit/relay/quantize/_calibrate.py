"""TVM's ``relay.quantize._calibrate``: scales from weights, a global scale or data."""

from relaykit.quantize.calibrate import (
    calibrate,
    collect_stats,
    max_scale,
    percentile_scale,
    power2_scale,
)

_find_scale_by_percentile = percentile_scale

__all__ = [
    "_find_scale_by_percentile",
    "calibrate",
    "collect_stats",
    "max_scale",
    "percentile_scale",
    "power2_scale",
]
