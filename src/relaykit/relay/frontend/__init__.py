"""``relay.frontend``: model importers under TVM's names (``relay.frontend.from_onnx``,
``relay.frontend.from_pytorch``, ``from_tflite``, ``from_tensorflow``, ``from_keras``,
``from_paddle``, ``from_coreml``).

>>> from relaykit.relay import frontend
>>> frontend.from_onnx.__module__
'relaykit.frontend.onnx.load'
"""

from relaykit.frontend import (
    DynamicShapeError,
    FrontendError,
    UnsupportedOpError,
    from_coreml,
    from_exported_program,
    from_keras,
    from_onnx,
    from_paddle,
    from_pytorch,
    from_tensorflow,
    from_tflite,
    load_model,
)
from relaykit.relay._facade import FRAMEWORK, unsupported

#: TVM's importers of other frameworks: each raises UnsupportedFeatureError when called
_OTHER_FRAMEWORKS = [
    "from_caffe", "from_caffe2", "from_darknet", "from_mxnet", "from_oneflow",
]  # fmt: skip
globals().update(unsupported(__name__, _OTHER_FRAMEWORKS, FRAMEWORK))

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
    *_OTHER_FRAMEWORKS,
]
