"""``tvm.relay.analysis.annotated_regions``: :mod:`relaykit.byoc.annotated_regions`."""

from relaykit.byoc.annotated_regions import AnnotatedRegion, AnnotatedRegionSet

__all__ = ["AnnotatedRegion", "AnnotatedRegionSet"]
