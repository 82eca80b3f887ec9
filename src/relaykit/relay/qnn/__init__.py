"""TVM's ``relay.qnn``: quantized operators (``relay.qnn.op``).

>>> from relaykit import relay
>>> relay.qnn.op.concatenate.__module__
'relaykit.op.qnn.transform'
"""

from . import op

__all__ = ["op"]
