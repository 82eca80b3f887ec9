"""TVM's ``tvm.parser``: ``parse``, ``fromtext`` and ``parse_expr`` for Relay text.

>>> import relaykit as tvm
>>> mod = tvm.parser.parse('def @main(%x: Tensor[(2), float32]) { add(%x, %x) }')
>>> mod["main"].checked_type.ret_type
TensorType((2,), float32)
"""

from .text.parser import fromtext, parse, parse_expr

__all__ = ["parse", "parse_expr", "fromtext"]
