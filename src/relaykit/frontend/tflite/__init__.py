"""The TFLite frontend: ``from_tflite(model, shape_dict, dtype_dict) -> (mod, params)``.

- :mod:`.importer`: :func:`from_tflite` and :class:`OperatorConverter`, the walk over
  the model's operators;
- :mod:`.schema`: reading the flatbuffer (tensors, buffers, quantization, options);
- :mod:`.registry`: the converter table and what a converter sees (:class:`OpContext`);
- :mod:`.quantized`: quantization parameters as QNN constants, requantize, clips;
- :mod:`.converters`: the converters, one module per operator family.

It needs the ``tflite`` package (``pip install relaykit[tflite]``), imported when a
model is read.

>>> from relaykit.frontend.tflite import supported_ops
>>> "DEPTHWISE_CONV_2D" in supported_ops()
True
"""

from .importer import ExprTable, OperatorConverter, from_tflite, supported_ops

__all__ = ["from_tflite", "OperatorConverter", "ExprTable", "supported_ops"]
