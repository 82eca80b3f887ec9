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
    abs,
    add,
    batch_matmul,
    concatenate,
    conv2d,
    conv2d_transpose,
    dense,
    dequantize,
    erf,
    exp,
    hardswish,
    leaky_relu,
    log,
    mul,
    quantize,
    requantize,
    rsqrt,
    sigmoid,
    simulated_dequantize,
    simulated_quantize,
    sqrt,
    subtract,
    tanh,
)

__all__ = [
    "op",
    "transform",
    "abs",
    "add",
    "batch_matmul",
    "concatenate",
    "conv2d",
    "conv2d_transpose",
    "dense",
    "dequantize",
    "erf",
    "exp",
    "hardswish",
    "leaky_relu",
    "log",
    "mul",
    "quantize",
    "requantize",
    "simulated_dequantize",
    "simulated_quantize",
    "rsqrt",
    "sigmoid",
    "sqrt",
    "subtract",
    "tanh",
]
