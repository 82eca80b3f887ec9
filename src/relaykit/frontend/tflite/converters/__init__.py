"""The TFLite converters, one module per operator family; importing this package
registers them in :data:`relaykit.frontend.tflite.registry.CONVERTERS`."""

from . import conv, elementwise, image, pool, quant, tensor

__all__ = ["conv", "elementwise", "image", "pool", "quant", "tensor"]
