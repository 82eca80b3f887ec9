"""TVM's ``relay.quantize``: automatic quantization (:mod:`relaykit.quantize`).

>>> from relaykit import relay
>>> with relay.quantize.qconfig(global_scale=4.0):
...     relay.quantize.current_qconfig().global_scale
4.0
"""

from relaykit.quantize import (
    QAnnotateKind,
    QConfig,
    QuantizeContext,
    current_qconfig,
    kind2str,
    prerequisite_optimize,
    qconfig,
    quantize_context,
    register_annotate_function,
    register_partition_function,
)
from relaykit.quantize import quantize as _quantize_function
from relaykit.quantize.annotate import annotate
from relaykit.quantize.calibrate import calibrate
from relaykit.quantize.partition import partition
from relaykit.quantize.realize import realize

from . import _annotate, _calibrate, _partition, _partition_conversions, _quantize, kl_divergence
from . import quantize as _quantize_module  # noqa: F401 - relay.quantize.quantize's module path

# Importing the submodule ``.quantize`` bound the name to the module; the function wins, as in
# TVM (whose package does ``from .quantize import *``).
quantize = _quantize_function

__all__ = [
    "QAnnotateKind",
    "QConfig",
    "QuantizeContext",
    "annotate",
    "calibrate",
    "current_qconfig",
    "kind2str",
    "kl_divergence",
    "partition",
    "prerequisite_optimize",
    "qconfig",
    "quantize",
    "quantize_context",
    "realize",
    "register_annotate_function",
    "register_partition_function",
]
_SUBMODULES = (_annotate, _calibrate, _partition, _partition_conversions, _quantize)
