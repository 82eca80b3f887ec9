"""TVM's ``relay.quantize.kl_divergence``: the KL-divergence threshold search."""

from relaykit.quantize.kl_divergence import find_scale_by_kl, minimize_kl

#: TVM's name.
_find_scale_by_kl = find_scale_by_kl

__all__ = ["_find_scale_by_kl", "find_scale_by_kl", "minimize_kl"]
