"""Keras in: ``from_keras(model, shape=None, layout="NCHW")`` for Keras 3 models
(``keras`` or ``tf.keras``): functional, Sequential and nested.

Layers convert through one table keyed by the layer's class name
(:data:`~relaykit.frontend.keras.registry.LAYERS`), reading each layer's config
and weights. Importing this package does not import keras; ``from_keras`` does, and
raises a :class:`~relaykit.errors.MissingDependencyError` naming the ``keras`` extra
when it is missing.

>>> from relaykit.frontend.keras import supported_layers
>>> {"Conv2D", "DepthwiseConv2D", "BatchNormalization", "Add"} <= set(supported_layers())
True
"""

from __future__ import annotations

from . import (  # noqa: F401 - each module registers its converters
    activations,
    layers_attention,
    layers_conv,
    layers_core,
    layers_merge,
    layers_padding,
    layers_pooling,
    layers_rnn,
    operations,
)
from .importer import from_keras
from .registry import LAYERS, OPERATIONS, require_keras

__all__ = ["from_keras", "supported_layers", "supported_operations", "require_keras"]


def supported_layers() -> list[str]:
    """The Keras layer class names the converter table knows."""
    return sorted(LAYERS)


def supported_operations() -> list[str]:
    """The ``keras.ops`` operation class names (recorded by functional models) it knows."""
    return sorted(OPERATIONS)
