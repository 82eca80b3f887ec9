"""Operators TVM names under ``relay.op.*``: automatic quantization's
``relay.op.annotation.simulated_quantize`` (see :mod:`.quantize`).

>>> from relaykit.op.relay import simulated_quantize
>>> simulated_quantize.__name__
'simulated_quantize'
"""

from .quantize import simulated_quantize

__all__ = ["simulated_quantize"]
