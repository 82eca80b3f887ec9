"""Bounds on the work an ONNX model can ask of the importer.

A model file is a few bytes of numbers: a dimension of ``2**62``, a sequence
length that unrolls forever, an initializer whose declared dims promise far
more data than it carries. The importer checks such numbers *before* it
allocates or loops, and raises a :class:`~relaykit.errors.FrontendError`
naming the node and the value:

- :data:`MAX_ELEMENTS`: no tensor type (graph input, initializer, node output)
  has more elements than this (2**32; a float32 tensor of that size is 16 GiB),
  nor, when empty, other dimensions multiplying to more;
- :data:`MAX_UNROLL_STEPS` and :data:`MAX_UNROLL_NODES`: recurrent layers,
  ``Scan``, ``Loop`` and the other converters that unroll over a length build
  at most this many steps and this many operator calls in all;
- constants computed at import are bounded by ``FoldConstant``'s limit (the
  ``PassContext`` option ``"relay.FoldConstant.max_bytes"``, 64 MiB per tensor by
  default): a larger one stays a runtime operator.

>>> check_shape((2, 3), "graph input 'x'")
>>> check_shape((2**40, 2**40), "graph input 'x'")
Traceback (most recent call last):
...
relaykit.errors.FrontendError: graph input 'x': shape (1099511627776, 1099511627776) has ...
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from relaykit.errors import FrontendError
from relaykit.ir.types import TensorType, TupleType, Type

__all__ = [
    "MAX_ELEMENTS",
    "MAX_UNROLL_STEPS",
    "MAX_UNROLL_NODES",
    "check_shape",
    "check_type",
    "check_unroll",
]

#: The most elements a tensor of an imported model may have.
MAX_ELEMENTS = 2**32

#: The most steps (time steps, iterations, batch items) a converter unrolls.
MAX_UNROLL_STEPS = 16384

#: The most operator calls one unrolled node may expand to (steps x calls per step).
MAX_UNROLL_NODES = 2**20


def check_shape(shape: Iterable[Any], where: str) -> None:
    """Raise a FrontendError naming ``where`` when ``shape`` has a negative dimension or
    more than :data:`MAX_ELEMENTS` elements; nothing is allocated."""
    # a ? (or symbolic) dimension is only known at run time: check the static ones
    dims = tuple(int(d) for d in shape if isinstance(d, (int, np.integer)))
    for k, d in enumerate(dims):
        if d < 0:
            raise FrontendError(f"{where}: dimension {k} of shape {dims} is negative ({d})")
    n = math.prod(dims)
    if n > MAX_ELEMENTS:
        raise FrontendError(
            f"{where}: shape {dims} has {n} elements, more than relaykit's limit of "
            f"{MAX_ELEMENTS} per tensor (is a dimension corrupted?)"
        )
    # an empty tensor, but NumPy still multiplies out the other dimensions
    nonzero = math.prod(d for d in dims if d)
    if nonzero > MAX_ELEMENTS:
        raise FrontendError(
            f"{where}: shape {dims} is empty but its other dimensions multiply to {nonzero}, "
            f"more than relaykit's limit of {MAX_ELEMENTS} (is a dimension corrupted?)"
        )


def check_type(ty: Type | None, where: str) -> None:
    """:func:`check_shape` on every tensor of a (tuple) type."""
    if isinstance(ty, TensorType):
        # the usual case (dims are >= 0)
        if ty.is_static and 0 < math.prod(ty.shape) <= MAX_ELEMENTS:
            return
        check_shape(ty.shape, where)
    elif isinstance(ty, TupleType):
        for f in ty.fields:
            check_type(f, where)


def check_unroll(where: str, what: str, steps: int, calls_per_step: int = 1) -> None:
    """Raise a FrontendError before a converter unrolls ``steps`` steps of
    ``calls_per_step`` operator calls each, when that is above the limits."""
    steps = int(steps)
    if steps > MAX_UNROLL_STEPS or steps * max(1, int(calls_per_step)) > MAX_UNROLL_NODES:
        raise FrontendError(
            f"{where}: {what} is {steps}; relaykit unrolls it into the graph at import, "
            f"up to {MAX_UNROLL_STEPS} steps and {MAX_UNROLL_NODES} operator calls "
            f"(this would be about {steps * max(1, int(calls_per_step))})"
        )
