"""``relay.frontend``: model importers under TVM's names (``relay.frontend.from_onnx``,
``relay.frontend.from_pytorch``).

>>> from relaykit.relay import frontend
>>> frontend.from_onnx.__module__
'relaykit.frontend.onnx.load'
"""

from relaykit.frontend import (
    DynamicShapeError,
    FrontendError,
    UnsupportedOpError,
    from_exported_program,
    from_onnx,
    from_pytorch,
    load_model,
)

__all__ = [
    "from_onnx",
    "load_model",
    "from_pytorch",
    "from_exported_program",
    "FrontendError",
    "UnsupportedOpError",
    "DynamicShapeError",
]
