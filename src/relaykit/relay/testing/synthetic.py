"""``tvm.relay.testing.synthetic``: :mod:`relaykit.testing.synthetic`."""

from relaykit.testing.synthetic import get_net, get_workload

__all__ = ["get_net", "get_workload"]
