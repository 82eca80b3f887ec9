"""ONNX operator converters, one module per operator family.

Each module registers its converters in :data:`relaykit.frontend.onnx.registry.CONVERTERS`
with the :func:`~relaykit.frontend.onnx.registry.converter` decorator; importing this
package registers them all.

>>> from relaykit.frontend.onnx.registry import lookup
>>> lookup("", "Conv", 17) is not None
True
"""

from . import (
    attention,
    control,
    conv,
    dynamic,
    index,
    math,
    misc,
    ml,
    nn,
    qlinear,
    quant,
    quant_contrib,
    reduce,
    rnn,
    sequence,
    shape,
    signal,
    vision,
)

__all__ = [
    "attention",
    "control",
    "conv",
    "dynamic",
    "index",
    "math",
    "misc",
    "ml",
    "nn",
    "qlinear",
    "quant",
    "quant_contrib",
    "reduce",
    "rnn",
    "sequence",
    "shape",
    "signal",
    "vision",
]
