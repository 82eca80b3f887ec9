"""TVM's ``relay.qnn.op``: the quantized operator constructors."""

from relaykit.op.qnn import *  # noqa: F403
from relaykit.op.qnn import __all__ as __all__

from . import qnn as qnn
