"""TVM's ``relay.qnn``: quantized operators (``relay.qnn.op``, also here by name, as in
TVM) and their passes (``relay.qnn.transform``).

>>> from relaykit import relay
>>> relay.qnn.op.concatenate.__module__
'relaykit.op.qnn.transform'
>>> relay.qnn.requantize is relay.qnn.op.requantize
True
"""

from . import op, transform
from .op import (
    add,
    batch_matmul,
    concatenate,
    conv2d,
    dense,
    dequantize,
    mul,
    quantize,
    requantize,
    subtract,
)

__all__ = [
    "op",
    "transform",
    "add",
    "batch_matmul",
    "concatenate",
    "conv2d",
    "dense",
    "dequantize",
    "mul",
    "quantize",
    "requantize",
    "subtract",
]
