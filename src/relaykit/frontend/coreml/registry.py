"""The table of Core ML layer converters and what each converter is given.

A converter takes the layer's parameter message (``layer.convolution``,
``layer.activation``...), its input expressions and a :class:`LayerContext`, and
returns one expression (or one per output of the layer). Converters are keyed by
the name of the layer in the ``NeuralNetworkLayer.layer`` oneof (``"convolution"``,
``"innerProduct"``...), the name the model's spec shows.

>>> from relaykit.frontend.coreml.registry import CONVERTERS
>>> "convolution" in CONVERTERS
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.errors import FrontendError, RelayKitError
from relaykit.ir.expr import Expr, TupleWrapper, Var, const
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType
from relaykit.registry import Registry

__all__ = ["CONVERTERS", "Converter", "LayerContext", "converter", "weights"]


class LayerContext:
    """What a converter may ask while one layer is converted: the layer's name, the
    shapes of expressions, and new parameters (weights become ``params`` entries)."""

    def __init__(self, params: dict[str, np.ndarray], param_vars: list[Var]) -> None:
        self.layer = ""
        self.kind = ""
        self._params = params
        self._param_vars = param_vars

    def fail(self, message: str) -> FrontendError:
        """An error naming the layer being converted."""
        return FrontendError(f"Core ML layer {self.layer!r} ({self.kind}): {message}")

    def shape(self, expr: Expr) -> tuple[int, ...]:
        """The static shape of ``expr``."""
        if isinstance(expr, TupleWrapper):
            expr = expr[0]
        try:
            ty = infer_type_local(expr)
        except RelayKitError as err:
            raise self.fail(str(err).split("\n", 1)[0]) from None
        if not isinstance(ty, TensorType):
            raise self.fail(f"expected a tensor input, got a value of type {ty}")
        return tuple(int(d) for d in ty.shape)

    def channel_axis(self, expr: Expr) -> int:
        """Core ML's channel axis: -3 of a ``[..., C, H, W]`` blob, 1 of ``[N, C]``."""
        rank = len(self.shape(expr))
        return rank - 3 if rank >= 3 else min(rank - 1, 1)

    def param(self, suffix: str, value: Any, shape: Sequence[int] | None = None) -> Var:
        """A float32 parameter named ``<layer>_<suffix>`` holding ``value``."""
        array = np.asarray(value, dtype=np.float32)
        if shape is not None:
            if array.size != int(np.prod(shape)):
                raise self.fail(
                    f"its {suffix} holds {array.size} values, the layer needs "
                    f"{int(np.prod(shape))} (shape {list(shape)})"
                )
            array = array.reshape(tuple(shape))
        name = f"{self.layer}_{suffix}"
        while name in self._params:
            name += "_"
        self._params[name] = array
        var = Var(name, TensorType(array.shape, "float32"))
        self._param_vars.append(var)
        return var

    @staticmethod
    def scalar(value: float) -> Expr:
        """A float32 scalar constant."""
        return const(float(value), "float32")


Converter = Callable[[LayerContext, Any, list[Expr]], Any]

CONVERTERS: Registry[str, Converter] = Registry("Core ML layer converter")


def converter(*names: str) -> Callable[[Converter], Converter]:
    """Register the decorated function for every layer kind in ``names``."""

    def decorate(fn: Converter) -> Converter:
        for name in names:
            CONVERTERS.register(name, fn)
        return fn

    return decorate


def weights(
    ctx: LayerContext,
    message: Any,
    what: str,
    shape: Sequence[int] | None = None,
    axis: int = 0,
) -> np.ndarray:
    """The float values of a ``WeightParams`` message: float32, float16, or quantized to
    1-8 bits (linear, per tensor or per channel along ``axis`` of ``shape``, or through
    a lookup table), dequantized here."""
    if len(message.floatValue):
        return np.asarray(message.floatValue, dtype=np.float32)
    if len(message.float16Value):
        return np.frombuffer(message.float16Value, dtype=np.float16).astype(np.float32)
    if len(message.int8RawValue):
        codes = np.frombuffer(message.int8RawValue, dtype=np.int8).astype(np.float64)
        return _dequantize(ctx, message.quantization, codes, what, shape, axis)
    if len(message.rawValue):
        bits = int(message.quantization.numberOfBits)
        if not 1 <= bits <= 8:
            raise ctx.fail(f"its {what} are raw bytes with no 1-8 bit quantization")
        packed = np.frombuffer(message.rawValue, dtype=np.uint8)
        count = int(np.prod(shape)) if shape is not None else packed.size * 8 // bits
        stream = np.unpackbits(packed)[: count * bits].reshape(count, bits)  # MSB first
        codes = stream.astype(np.int64) @ (1 << np.arange(bits - 1, -1, -1))
        return _dequantize(ctx, message.quantization, codes.astype(np.float64), what, shape, axis)
    return np.zeros(0, dtype=np.float32)


def _dequantize(
    ctx: LayerContext,
    quant: Any,
    codes: np.ndarray,
    what: str,
    shape: Sequence[int] | None,
    axis: int,
) -> np.ndarray:
    kind = quant.WhichOneof("QuantizationType")
    if kind == "lookupTableQuantization":
        table = np.asarray(quant.lookupTableQuantization.floatValue, dtype=np.float64)
        return table[codes.astype(np.int64)].astype(np.float32)
    if kind != "linearQuantization":
        raise ctx.fail(f"its {what} are quantized without a scale or a lookup table")
    scale = np.asarray(quant.linearQuantization.scale, dtype=np.float64)
    bias = np.asarray(quant.linearQuantization.bias, dtype=np.float64)
    if bias.size == 0:
        bias = np.zeros_like(scale)
    if scale.size <= 1:
        return (codes * scale.reshape(-1)[:1].sum() + bias.reshape(-1)[:1].sum()).astype(np.float32)
    dims = list(shape) if shape is not None else [scale.size, -1]
    grid = codes.reshape(dims)
    view = [1] * grid.ndim
    view[axis] = scale.size
    return (grid * scale.reshape(view) + bias.reshape(view)).reshape(-1).astype(np.float32)
