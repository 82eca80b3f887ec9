"""Core ML in: NeuralNetwork models (``.mlmodel``; plain, classifier or regressor)
as Relay modules, with TVM's ``from_coreml(model, shape=None)``.

Importing this package does not import coremltools: ``from_coreml`` reads the
model's spec (an ``MLModel``'s ``get_spec()``, or the spec itself) and needs
coremltools only to load a path (:class:`~relaykit.errors.MissingDependencyError`
names the ``coreml`` extra when it is missing).

>>> from relaykit.frontend.coreml import supported_layers
>>> {"convolution", "pooling", "innerProduct", "softmax"} <= set(supported_layers())
True
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.module import IRModule
from relaykit.runtime.ndarray import NDArray

from . import (  # noqa: F401 - each module registers its converters
    layers_nd,
    layers_nn,
    layers_recurrent,
    layers_spatial,
    layers_tensor,
)
from .importer import from_coreml as _from_coreml
from .importer import require_coremltools
from .registry import CONVERTERS

__all__ = ["from_coreml", "supported_layers", "require_coremltools"]


def from_coreml(model: Any, shape: Any = None) -> tuple[IRModule, dict[str, NDArray]]:
    """A Core ML NeuralNetwork model as ``(IRModule, params)``.

    ``model`` is a ``coremltools.models.MLModel`` (or its spec, or a path to an
    ``.mlmodel``); ``shape`` maps input names to NCHW shapes (by default an image
    input of ``C x H x W`` is ``[1, C, H, W]``). Layers relaykit cannot convert are
    reported together in one :class:`~relaykit.errors.UnsupportedOpError`.

    >>> from relaykit.frontend.coreml import from_coreml
    >>> from_coreml(42)
    Traceback (most recent call last):
    ...
    relaykit.errors.FrontendError: from_coreml takes a coremltools.models.MLModel ...
    """
    return _from_coreml(model, shape)


def supported_layers() -> list[str]:
    """The Core ML layer kinds (``NeuralNetworkLayer`` oneof names) relaykit converts."""
    return sorted(CONVERTERS)
