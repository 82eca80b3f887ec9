"""TVM's ``relay.qnn``: quantized operators (``relay.qnn.op``, also here by name, as in
TVM) and their passes (``relay.qnn.transform``).

>>> from relaykit import relay
>>> relay.qnn.op.concatenate.__module__
'relaykit.op.qnn.transform'
>>> relay.qnn.requantize is relay.qnn.op.requantize
True
"""

from . import op, transform
from .op import *  # noqa: F403
from .op import __all__ as _op_names

__all__ = ["op", "transform", *_op_names]
