"""The converter table of the Keras frontend, keyed by the layer's class name, and the
context a converter works in.

A converter is ``fn(ctx, layer, inputs, kwargs) -> expr or list of exprs``: ``layer``
is the Keras layer itself (its config and weights are read from it), ``inputs`` the
Relay expressions of its tensor inputs in the order Keras passes them, ``kwargs`` the
keyword arguments of the call with tensors replaced by expressions. Converters build
the model in Keras's own layout (channels last); :mod:`.layout` turns the result into
NCHW when asked.

This module does not import keras.

>>> from relaykit.frontend.keras import supported_layers
>>> {"Conv2D", "Dense", "BatchNormalization"} <= set(supported_layers())
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.errors import FrontendError, MissingDependencyError, RelayKitError
from relaykit.ir.expr import Constant, Expr, checked_type_or_none, const
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType
from relaykit.registry import Registry

__all__ = [
    "LAYERS",
    "OPERATIONS",
    "Converter",
    "LayerContext",
    "describe",
    "layer_converter",
    "operation_converter",
    "require_keras",
]

Converter = Callable[["LayerContext", Any, list[Expr], dict[str, Any]], Any]

#: Keras layer class name -> converter
LAYERS: Registry[str, Converter] = Registry("Keras layer converter")
#: Keras operation class name (``keras.ops``, e.g. ``x + y`` in a functional model) ->
#: converter
OPERATIONS: Registry[str, Converter] = Registry("Keras operation converter")


def require_keras() -> Any:
    """The ``keras`` module, or a clear error saying which extra to install."""
    try:
        import keras
    except ImportError:
        raise MissingDependencyError(
            "the Keras frontend needs keras 3 with TensorFlow: "
            "pip install 'relaykit[keras,tensorflow]' (keras==3.15.1, tensorflow-cpu==2.21.0)"
        ) from None
    return keras


def layer_converter(*names: str) -> Callable[[Converter], Converter]:
    """Register the decorated function for every layer class in ``names``."""

    def decorate(fn: Converter) -> Converter:
        for name in names:
            LAYERS.register(name, fn)
        return fn

    return decorate


def operation_converter(*names: str) -> Callable[[Converter], Converter]:
    """Register the decorated function for every ``keras.ops`` operation in ``names``."""

    def decorate(fn: Converter) -> Converter:
        for name in names:
            OPERATIONS.register(name, fn)
        return fn

    return decorate


def describe(layer: Any) -> str:
    """``layer 'conv2d' (Conv2D)``: how errors name a layer."""
    return f"layer {getattr(layer, 'name', '?')!r} ({type(layer).__name__})"


class LayerContext:
    """What a converter may ask: the types of expressions, the layer's weights as
    constants (remembered by name for the returned ``params``), and errors that name
    the layer."""

    def __init__(self) -> None:
        self.layer: Any = None
        #: constant -> the parameter name it gets in ``params`` (``<layer>.<weight>``)
        self.weight_names: dict[Constant, str] = {}
        # (layer, weight name) -> its constant: a layer used twice has one set of weights
        self._weights: dict[tuple[int, str], Constant] = {}

    @property
    def where(self) -> str:
        return describe(self.layer)

    def fail(self, message: str) -> FrontendError:
        return FrontendError(f"{self.where}: {message}")

    def type_of(self, expr: Expr) -> TensorType:
        ty = checked_type_or_none(expr)
        if ty is None:
            try:
                ty = infer_type_local(expr)
            except RelayKitError as err:
                raise self.fail(str(err).split("\n", 1)[0]) from None
        if not isinstance(ty, TensorType):
            raise self.fail(f"expected a tensor, got a value of type {ty}")
        return ty

    def shape(self, expr: Expr) -> tuple[int, ...]:
        shape = self.type_of(expr).shape
        if not all(isinstance(d, int) for d in shape):
            raise self.fail(f"the input shape {shape} is not static")
        return tuple(int(d) for d in shape)

    def ndim(self, expr: Expr) -> int:
        return len(self.type_of(expr).shape)

    def dtype(self, expr: Expr) -> str:
        return str(self.type_of(expr).dtype)

    def scalar(self, value: float, like: Expr) -> Expr:
        """``value`` as a scalar constant of ``like``'s dtype."""
        dtype = self.dtype(like)
        return const(np.array(value, dtype=dtype), dtype)

    def weight(self, name: str, value: Any = None) -> Constant:
        """The layer's weight ``name`` (its attribute, e.g. ``kernel``), or ``value``
        given as an array (what the layer computes from its weights), as a constant named
        ``<layer>.<name>``; the same constant each time the layer is used."""
        key = (id(self.layer), name)
        if key in self._weights:
            return self._weights[key]
        arr = weight_array(self.layer, name) if value is None else np.asarray(value)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        c = const(np.ascontiguousarray(arr), str(arr.dtype))
        self.weight_names[c] = f"{self.layer.name}.{name}"
        self._weights[key] = c
        return c

    def config(self, key: str, default: Any = None) -> Any:
        """A field of the layer's ``get_config()``."""
        return self.layer.get_config().get(key, default)


def weight_array(layer: Any, name: str) -> np.ndarray:
    """The NumPy value of the layer's variable ``name``."""
    var = getattr(layer, name, None)
    if var is None:
        raise FrontendError(f"{describe(layer)}: it has no weight {name!r}")
    value = var.numpy() if hasattr(var, "numpy") else var
    return np.asarray(value)


def as_tuple(value: Any, n: int) -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple of ``n`` ints."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    out = tuple(int(v) for v in value)
    if len(out) != n:
        raise FrontendError(f"expected {n} values, got {value!r}")
    return out
