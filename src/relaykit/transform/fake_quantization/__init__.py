"""FakeQuantizationToInteger (:mod:`.rewrite`), its rule table (:mod:`.registry`), the
rules by operator family (:mod:`.quantize`, :mod:`.linear`, :mod:`.elementwise`,
:mod:`.layout`, :mod:`.pooling`), and the analysis listing the operators of
fake-quantized regions (:mod:`.analysis`).

>>> from relaykit import relay
>>> relay.transform.FakeQuantizationToInteger is FakeQuantizationToInteger
True
"""

from . import elementwise as elementwise
from . import layout as layout
from . import linear as linear
from . import pooling as pooling
from . import quantize as quantize
from .analysis import list_fake_quantized_op_freqs
from .registry import (
    QAT_OPS,
    register_fake_quantization_to_integer,
    register_optional_fake_quantization_to_integer,
)
from .rewrite import FakeQuantizationToInteger, fake_quantization_to_integer

__all__ = [
    "FakeQuantizationToInteger",
    "fake_quantization_to_integer",
    "list_fake_quantized_op_freqs",
    "register_fake_quantization_to_integer",
    "register_optional_fake_quantization_to_integer",
    "QAT_OPS",
]
