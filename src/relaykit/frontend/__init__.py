"""Frontends: import models from other frameworks into Relay.

>>> from relaykit.frontend import from_onnx, load_model
>>> callable(from_onnx) and callable(load_model)
True
"""

from relaykit.errors import DynamicShapeError, FrontendError, UnsupportedOpError

from .onnx import from_onnx, load_model

__all__ = ["from_onnx", "load_model", "FrontendError", "UnsupportedOpError", "DynamicShapeError"]
