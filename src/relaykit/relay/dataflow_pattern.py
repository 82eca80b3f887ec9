"""TVM's ``relay.dataflow_pattern``: the same module as :mod:`relaykit.dataflow_pattern`."""

import sys

import relaykit.dataflow_pattern as _impl

sys.modules[__name__] = _impl
