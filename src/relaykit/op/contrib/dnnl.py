"""TVM's ``relay.op.contrib.dnnl``: the dnnl backend's rules, patterns and partitioning.

The backend lives in :mod:`relaykit.contrib.dnnl`; this module re-exports its
TVM-facing names, so scripts written for TVM run unchanged::

    from tvm.relay.op.contrib.dnnl import partition_for_dnnl
    mod = partition_for_dnnl(mod, params)

Importing it registers the ``target.dnnl`` rules and the ``dnnl`` pattern table.
"""

from __future__ import annotations

from relaykit.contrib.dnnl import partition_for_dnnl, pattern_table
from relaykit.contrib.dnnl.rules import check_call

__all__ = ["partition_for_dnnl", "pattern_table", "check_call"]
