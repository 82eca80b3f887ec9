"""Quantized operators (TVM's ``relay.qnn.op``), one file per family:
:mod:`.quantize` (quantize, dequantize, requantize, simulated_*), :mod:`.binary` (add,
subtract, mul), :mod:`.linear` (dense, batch_matmul), :mod:`.convolution` (conv2d,
conv2d_transpose), :mod:`.transform` (concatenate), :mod:`.unary` (tanh, exp, sqrt,
rsqrt, erf, abs, sigmoid, hardswish, log, leaky_relu), :mod:`.pooling` (avg_pool2d),
:mod:`.activation` (softmax), :mod:`.dense_pack` (contrib_dense_pack, dense with a
packed weight). :mod:`.canonicalize` holds each
operator's ``FTVMQnnCanonicalize`` hook (its lowering to plain integer Relay),
:mod:`.legalize` the ``FTVMLegalize`` hook removing a full-range clip after requantize.

>>> from relaykit import relay
>>> relay.qnn.op.concatenate is concatenate
True
"""

from . import canonicalize as canonicalize
from . import legalize as legalize
from . import target_legalize as target_legalize
from .activation import softmax
from .binary import add, mul, subtract
from .config import RequantizeConfig, current_requantize_config, requantize_config
from .convolution import conv2d, conv2d_transpose
from .dense_pack import contrib_dense_pack
from .linear import batch_matmul, dense
from .pooling import avg_pool2d
from .quantize import (
    dequantize,
    quantize,
    requantize,
    simulated_dequantize,
    simulated_quantize,
)
from .transform import concatenate
from .unary import abs, erf, exp, hardswish, leaky_relu, log, rsqrt, sigmoid, sqrt, tanh

__all__ = [
    "quantize",
    "dequantize",
    "requantize",
    "requantize_config",
    "current_requantize_config",
    "RequantizeConfig",
    "simulated_quantize",
    "simulated_dequantize",
    "add",
    "subtract",
    "mul",
    "dense",
    "contrib_dense_pack",
    "batch_matmul",
    "conv2d",
    "conv2d_transpose",
    "concatenate",
    "tanh",
    "exp",
    "sqrt",
    "rsqrt",
    "erf",
    "abs",
    "sigmoid",
    "hardswish",
    "log",
    "leaky_relu",
    "softmax",
    "avg_pool2d",
]
