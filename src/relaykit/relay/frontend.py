"""``relay.frontend``: model importers under TVM's names (``relay.frontend.from_onnx``).

>>> from relaykit.relay import frontend
>>> frontend.from_onnx.__module__
'relaykit.frontend.onnx'
"""

from relaykit.frontend import (
    DynamicShapeError,
    FrontendError,
    UnsupportedOpError,
    from_onnx,
    load_model,
)

__all__ = ["from_onnx", "load_model", "FrontendError", "UnsupportedOpError", "DynamicShapeError"]
