"""The converter table of the TensorFlow frontend, keyed by TensorFlow op name, and
what a converter may ask about its node (:class:`NodeContext`).

A converter takes the node's context and returns a Relay expression, or a list of
them for an op with several outputs. Inputs arrive as Relay expressions; values
that are known at import (constants, and what was computed from constants only)
can be read as NumPy arrays with :meth:`NodeContext.value`.

>>> "Conv2D" in CONVERTERS and "StridedSlice" in CONVERTERS
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from relaykit.errors import DynamicShapeError, FrontendError, RelayKitError
from relaykit.ir.expr import Constant, Expr, checked_type_or_none
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType
from relaykit.registry import Registry

__all__ = ["CONVERTERS", "Converter", "NodeContext", "converter"]

Converter = Callable[["NodeContext"], Any]

#: TensorFlow op name -> converter
CONVERTERS: Registry[str, Converter] = Registry("TensorFlow op converter")


def converter(*names: str) -> Callable[[Converter], Converter]:
    """Register ``fn`` as the converter of each op in ``names``."""

    def decorate(fn: Converter) -> Converter:
        for name in names:
            CONVERTERS.register(name, fn)
        return fn

    return decorate


class NodeContext:
    """One node being converted: its name, op, attributes, input expressions, the
    values known at import, and the import's options (``layout``, ``config``)."""

    def __init__(
        self,
        node: Any,
        attrs: dict[str, Any],
        inputs: Sequence[Expr],
        known: Mapping[Expr, np.ndarray],
        layout: str,
        config: Mapping[str, Any],
    ) -> None:
        self.name: str = node.name
        self.op: str = node.op
        self.attrs = attrs
        self.inputs = list(inputs)
        self.known = known
        self.layout = layout
        self.config = config

    @property
    def where(self) -> str:
        return f"node {self.name!r} ({self.op})"

    def fail(self, message: str) -> FrontendError:
        return FrontendError(f"{self.where}: {message}")

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    def type_of(self, i: int) -> TensorType:
        expr = self.inputs[i]
        ty = checked_type_or_none(expr)
        if ty is None:
            try:
                ty = infer_type_local(expr)
            except RelayKitError as err:
                raise self.fail(str(err).split("\n", 1)[0]) from None
        if not isinstance(ty, TensorType):
            raise self.fail(f"input {i} is not a tensor (its type is {ty})")
        return ty

    def shape(self, i: int) -> list[int]:
        """The static shape of input ``i``."""
        shape = self.type_of(i).shape
        if not all(isinstance(d, (int, np.integer)) for d in shape):
            raise DynamicShapeError(
                f"{self.where}: input {i} has the dynamic shape {list(shape)}; give the "
                "graph's inputs static shapes with from_tensorflow(graph, shape={...})"
            )
        return [int(d) for d in shape]

    def dtype(self, i: int) -> str:
        return self.type_of(i).dtype

    def ndim(self, i: int) -> int:
        return len(self.type_of(i).shape)

    def is_known(self, i: int) -> bool:
        expr = self.inputs[i]
        return isinstance(expr, Constant) or expr in self.known

    def value(self, i: int, what: str = "") -> np.ndarray:
        """Input ``i``'s value, which must be known at import (a constant, or computed
        from constants only)."""
        expr = self.inputs[i]
        if isinstance(expr, Constant):
            return expr.data.numpy()
        if expr in self.known:
            return self.known[expr]
        label = what or f"input {i}"
        raise DynamicShapeError(
            f"{self.where}: {label} must be known at import (a constant, or computed from "
            "constants and static shapes only), but it depends on a graph input"
        )

    def ints(self, i: int, what: str = "") -> list[int]:
        return [int(v) for v in np.asarray(self.value(i, what)).reshape(-1)]

    def axis(self, axis: int, rank: int) -> int:
        a = int(axis)
        if not -max(rank, 1) <= a < max(rank, 1):
            raise self.fail(f"axis {a} is out of range for a tensor of rank {rank}")
        return a + rank if a < 0 else a
