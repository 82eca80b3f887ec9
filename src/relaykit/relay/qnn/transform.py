"""TVM's ``relay.qnn.transform``: ``CanonicalizeOps`` and ``Legalize``
(:mod:`relaykit.transform.qnn_canonicalize`)."""

from relaykit.transform.qnn_canonicalize import CanonicalizeOps, Legalize

__all__ = ["CanonicalizeOps", "Legalize"]
