"""The converter table of the PaddlePaddle frontend and what a converter may ask.

Converters are keyed by canonical op name (:func:`.program.canonical_op`: the PIR
name, so ``elementwise_add`` and ``pd_op.add`` reach the same one). A converter
takes an :class:`OpContext` and returns the op's main output (an expression), or a
dict of output slot -> expression when other outputs are used.

>>> "conv2d" in CONVERTERS and "add" in CONVERTERS
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from relaykit.errors import FrontendError, RelayKitError
from relaykit.ir.expr import Constant, Expr, TupleWrapper, checked_type_or_none, const
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType
from relaykit.registry import Registry

from .program import PaddleOp, dtype_name

__all__ = ["CONVERTERS", "Converter", "OpContext", "converter"]

Converter = Callable[["OpContext"], Any]

#: canonical paddle op name -> converter
CONVERTERS: Registry[str, Converter] = Registry("PaddlePaddle op converter")

_MISSING = object()


def converter(*names: str) -> Callable[[Converter], Converter]:
    """Register the decorated function under every name in ``names``."""

    def decorate(fn: Converter) -> Converter:
        for name in names:
            CONVERTERS.register(name, fn)
        return fn

    return decorate


class OpContext:
    """One op being converted: its inputs as expressions, its attributes, the types of
    what it reads. Slot and attribute lookups take several names (ProgramDesc and PIR
    spell some differently) and use the first one present."""

    def __init__(self, op: PaddleOp, values: Mapping[str, Any]) -> None:
        self.op = op
        self._values = values

    @property
    def type(self) -> str:
        return self.op.type

    def fail(self, message: str) -> FrontendError:
        return FrontendError(f"{self.op.describe()}: {message}")

    # -- inputs ------------------------------------------------------------------------
    def _slot_values(self, slot: str) -> list[Any]:
        out: list[Any] = []
        for key in self.op.inputs.get(slot, []):
            if key not in self._values:
                raise self.fail(f"input {slot!r} ({key}) is not computed by any earlier op")
            value = self._values[key]
            out.extend(value if isinstance(value, list) else [value])
        return out

    def has(self, *slots: str) -> bool:
        return any(self.op.inputs.get(s) for s in slots)

    def input(self, *slots: str) -> Expr:
        """The (single) tensor of the first present slot among ``slots``."""
        for slot in slots:
            values = self._slot_values(slot)
            if values:
                value = values[0]
                return value[0] if isinstance(value, TupleWrapper) else value
        raise self.fail(f"has no input {' / '.join(slots)}")

    def optional(self, *slots: str) -> Expr | None:
        return self.input(*slots) if self.has(*slots) else None

    def inputs(self, *slots: str) -> list[Expr]:
        """All tensors of the first present slot (a list input such as concat's)."""
        for slot in slots:
            values = self._slot_values(slot)
            if values:
                return values
        return []

    # -- attributes --------------------------------------------------------------------
    def attr(self, *names: str, default: Any = _MISSING) -> Any:
        for name in names:
            if name in self.op.attrs and self.op.attrs[name] is not None:
                return self.op.attrs[name]
        if default is _MISSING:
            raise self.fail(f"has no attribute {' / '.join(names)}")
        return default

    def values(
        self, slots: tuple[str, ...], attrs: tuple[str, ...], default: Any = _MISSING
    ) -> Any:
        """A list of numbers given either as a constant input (PIR's
        ``full_int_array`` operands, ProgramDesc's ``*Tensor`` slots, a list of scalar
        tensors) or as an attribute: the input wins when present."""
        for slot in slots:
            values = self._slot_values(slot) if self.op.inputs.get(slot) else []
            if not values:
                continue
            parts = [self.constant(v) for v in values]
            if any(p is None for p in parts):
                raise self.fail(
                    f"its {slot!r} is computed at run time; relaykit needs it to be a "
                    "constant (export the model with static shapes)"
                )
            return np.concatenate([np.asarray(p).reshape(-1) for p in parts]).tolist()
        return self.attr(*attrs, default=default) if attrs else default

    # -- types -------------------------------------------------------------------------
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
        return tuple(int(d) for d in self.type_of(expr).shape)

    def dtype(self, expr: Expr) -> str:
        return str(self.type_of(expr).dtype)

    def ndim(self, expr: Expr) -> int:
        return len(self.type_of(expr).shape)

    def axis(self, axis: Any, ndim: int) -> int:
        a = int(axis)
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise self.fail(f"axis {a} is out of range for a tensor of rank {ndim}")
        return a + ndim if a < 0 else a

    @staticmethod
    def constant(expr: Any) -> np.ndarray | None:
        """The value of a constant expression, else None."""
        if isinstance(expr, Constant):
            return np.asarray(expr.data.numpy())
        return None

    def expr(self, value: Any, like: Expr) -> Expr:
        """``value`` (an expression, or a number as a constant of ``like``'s dtype)."""
        return value if isinstance(value, Expr) else self.const(value, self.dtype(like))

    @staticmethod
    def const(value: Any, dtype: str) -> Expr:
        return const(np.asarray(value).astype(dtype), dtype)

    @staticmethod
    def dtype_name(value: Any) -> str:
        return dtype_name(value)
