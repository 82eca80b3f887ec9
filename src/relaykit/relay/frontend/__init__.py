"""``relay.frontend``: model importers under TVM's names (``relay.frontend.from_onnx``,
``relay.frontend.from_pytorch``, ``relay.frontend.from_tflite``).

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
    from_tflite,
    load_model,
)
from relaykit.relay._facade import FRAMEWORK, unsupported

#: TVM's importers of other frameworks: each raises UnsupportedFeatureError when called
_OTHER_FRAMEWORKS = [
    "from_caffe", "from_caffe2", "from_coreml", "from_darknet", "from_keras", "from_mxnet",
    "from_oneflow", "from_paddle", "from_tensorflow",
]  # fmt: skip
globals().update(unsupported(__name__, _OTHER_FRAMEWORKS, FRAMEWORK))

__all__ = [
    "from_onnx",
    "load_model",
    "from_pytorch",
    "from_exported_program",
    "from_tflite",
    "FrontendError",
    "UnsupportedOpError",
    "DynamicShapeError",
    *_OTHER_FRAMEWORKS,
]
