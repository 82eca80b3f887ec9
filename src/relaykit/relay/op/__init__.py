"""``tvm.relay.op``: the operators (:mod:`relaykit.op`) under TVM's module paths.

As in TVM, ``relay.op.const`` is also here (TVM's operator modules import it).

>>> from relaykit.relay import op
>>> op.const(1, dtype="int8").data.dtype
'int8'
"""

import relaykit.op as _impl
from relaykit.ir.expr import const
from relaykit.relay._facade import forward

from . import memory as memory  # TVM's packages (relay.op.memory.memory), not
from . import vm as vm  # relaykit.op's modules of the same names

__all__, _forward_getattr, __dir__ = forward(_impl)
__all__ = [*__all__, "const"]
__getattr__ = _forward_getattr
