"""TVM's ``relay.qnn.op``: the quantized operator constructors."""

from relaykit.op.qnn import (
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
