"""TVM's ``relay.qnn.op``: the quantized operator constructors relaykit has."""

from relaykit.op.qnn import concatenate

__all__ = ["concatenate"]
