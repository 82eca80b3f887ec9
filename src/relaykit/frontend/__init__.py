"""Frontends: import models from other frameworks into Relay.

>>> from relaykit.frontend import from_onnx, load_model, from_pytorch, from_exported_program
>>> callable(from_onnx) and callable(load_model) and callable(from_pytorch)
True
"""

from relaykit.errors import DynamicShapeError, FrontendError, UnsupportedOpError

from .coreml import from_coreml
from .keras import from_keras
from .onnx import from_onnx, load_model
from .paddle import from_paddle
from .pytorch import from_exported_program, from_pytorch
from .tensorflow import from_tensorflow
from .tflite import from_tflite

__all__ = [
    "from_onnx",
    "load_model",
    "from_pytorch",
    "from_exported_program",
    "from_keras",
    "from_tensorflow",
    "from_coreml",
    "from_paddle",
    "from_tflite",
    "FrontendError",
    "UnsupportedOpError",
    "DynamicShapeError",
]
