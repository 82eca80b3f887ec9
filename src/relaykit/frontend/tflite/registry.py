"""The TFLite converter table and what a converter sees of its operator.

A converter is one function per builtin operator name, registered with
``@converter("CONV_2D")``; it receives an :class:`OpContext` (the operator's input and
output tensors, their Relay values, its builtin options) and returns the Relay value of
each output (one expression, or a list for several outputs).

>>> from relaykit.frontend.tflite import supported_ops
>>> "CONV_2D" in supported_ops()
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.errors import FrontendError
from relaykit.ir.expr import Constant, Expr
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType
from relaykit.registry import Registry

from .schema import TensorInfo, read_options

__all__ = ["CONVERTERS", "Converter", "OpContext", "converter"]

Converter = Callable[["OpContext"], "Expr | Sequence[Expr]"]

#: builtin operator name -> converter
CONVERTERS: Registry[str, Converter] = Registry("TFLite op converter")


def converter(*names: str) -> Callable[[Converter], Converter]:
    """Register a converter for the builtin operators ``names``."""

    def register(fn: Converter) -> Converter:
        for name in names:
            CONVERTERS.register(name, fn)
        return fn

    return register


class OpContext:
    """One operator being converted: ``name`` (``CONV_2D``), ``inputs`` (tensor infos,
    ``None`` for an omitted optional input), ``outputs``, and access to the Relay values
    of its inputs through ``expr(i)``."""

    def __init__(
        self,
        name: str,
        index: int,
        op: Any,
        inputs: Sequence[TensorInfo | None],
        outputs: Sequence[TensorInfo],
        get_expr: Callable[[TensorInfo], Expr],
    ) -> None:
        self.name = name
        self.index = index
        self.op = op
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self._get_expr = get_expr

    @property
    def where(self) -> str:
        out = self.outputs[0].name if self.outputs else "?"
        return f"TFLite operator {self.index} ({self.name}, output '{out}')"

    def fail(self, message: str) -> FrontendError:
        """A FrontendError about this operator."""
        return FrontendError(f"{self.where}: {message}")

    # -- inputs ---------------------------------------------------------------
    def tensor(self, i: int) -> TensorInfo:
        t = self.inputs[i] if i < len(self.inputs) else None
        if t is None:
            raise self.fail(f"its input {i} is missing")
        return t

    def has_input(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def expr(self, i: int) -> Expr:
        """The Relay value of input ``i`` (a constant for a tensor with data)."""
        return self._get_expr(self.tensor(i))

    def value(self, i: int, what: str = "") -> np.ndarray:
        """The constant data of input ``i``, which this operator needs at import time."""
        t = self.tensor(i)
        if t.data is not None:
            return t.data
        e = self._get_expr(t)
        if isinstance(e, Constant):
            return np.asarray(e.data.numpy())
        raise self.fail(
            f"its {what or f'input {i}'} ('{t.name}') is computed at run time, but relaykit "
            "needs it as a constant of the model here"
        )

    def is_const(self, i: int) -> bool:
        t = self.tensor(i)
        return t.data is not None or isinstance(self._get_expr(t), Constant)

    def options(self, options_class: str) -> Any:
        """The builtin options of this operator as ``tflite.<options_class>``."""
        opts = read_options(self.op, options_class)
        if opts is None:
            raise self.fail(f"it carries no {options_class}")
        return opts

    # -- types ----------------------------------------------------------------
    def type_of(self, expr: Expr) -> TensorType:
        ty = infer_type_local(expr)
        if not isinstance(ty, TensorType):
            raise self.fail(f"expected a tensor value, got {ty}")
        return ty

    def shape(self, expr: Expr) -> tuple[int, ...]:
        return tuple(int(d) for d in self.type_of(expr).shape)

    def dtype(self, expr: Expr) -> str:
        return self.type_of(expr).dtype
