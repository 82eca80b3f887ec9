"""Frontends: import models from other frameworks into Relay.

>>> from relaykit.frontend import from_onnx, load_model, from_pytorch, from_exported_program
>>> callable(from_onnx) and callable(load_model) and callable(from_pytorch)
True
"""

from relaykit.errors import DynamicShapeError, FrontendError, UnsupportedOpError

from .onnx import from_onnx, load_model
from .pytorch import from_exported_program, from_pytorch
from .tflite import from_tflite

__all__ = [
    "from_onnx",
    "load_model",
    "from_pytorch",
    "from_exported_program",
    "from_tflite",
    "FrontendError",
    "UnsupportedOpError",
    "DynamicShapeError",
]
