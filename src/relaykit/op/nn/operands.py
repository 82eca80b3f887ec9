"""What the ``nn.*`` operator families ask of their operands and give their results.

- type relations: :func:`same_dtype`, :func:`check_vector` (a per-channel vector such as
  a bias, a scale or a slope);
- input solvers (TVM's weight-shape deduction): :func:`known_data`, :func:`fill_input`,
  :func:`axis_vector`, :func:`channel_vectors_solve`;
- reference kernels: :func:`result_dtype`, :func:`acc_dtype`;
- constructors: :func:`opt_int`, :func:`dtype_attr`.

A solver is the ``"FTypeSolveInputs"`` attribute of an operator:
``solver(arg_types, attrs) -> [Type | None per input]``. The type checker calls it
when some inputs of a call have no known type yet (an :class:`IncompleteType`, e.g.
``relay.var("weight")`` without a shape) and unifies each unknown input with what
the solver returns; ``None`` means "cannot say". Known inputs are returned as they
are, so the relation then checks the call as usual.

>>> from relaykit.ir.attrs import Attrs
>>> from relaykit.ir.types import IncompleteType, TensorType
>>> data = TensorType((2, 8, 4))
>>> [str(t) for t in channel_vectors_solve([data, IncompleteType()], Attrs({"axis": 1}))]
['Tensor[(2, 8, 4), float32]', 'Tensor[(8), float32]']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.types import IncompleteType, TensorType, Type, check_dtype
from relaykit.op._relations import differ, normalize_axis
from relaykit.op.define import TypeRelError

__all__ = [
    "Solved",
    "same_dtype",
    "check_vector",
    "known_data",
    "fill_input",
    "axis_vector",
    "channel_vectors_solve",
    "result_dtype",
    "acc_dtype",
    "opt_int",
    "dtype_attr",
]

Solved = list[Type | None]


# -- type relations -------------------------------------------------------------------------------


def same_dtype(a: TensorType, b: TensorType, names: str) -> None:
    """Raise unless ``a`` and ``b`` (named by ``names``) have one dtype."""
    if a.dtype != b.dtype:
        raise TypeRelError(f"{names} must have the same dtype, got {a} and {b}")


def check_vector(t: TensorType, size: int, dtype: str, what: str) -> None:
    """Raise unless ``t`` is a vector of ``size`` elements of ``dtype``."""
    want = TensorType((size,), dtype)
    if t.dtype != dtype or t.ndim != 1 or differ(t.shape[0], size):
        raise TypeRelError(f"{what} must be {want}, got {t}")


# -- input solvers --------------------------------------------------------------------------------


def known_data(arg_types: Sequence[Type]) -> TensorType | None:
    """The type of the first input (the data) when it is a known tensor type."""
    data = arg_types[0] if arg_types else None
    return data if isinstance(data, TensorType) else None


def fill_input(arg_types: Sequence[Type], i: int, make: object) -> Solved:
    """``arg_types`` with input ``i`` replaced by ``make()`` when it is unknown."""
    out: Solved = list(arg_types)
    if i < len(out) and isinstance(out[i], IncompleteType):
        out[i] = make()  # type: ignore[operator]
    return out


def axis_vector(data: TensorType, attrs: Attrs, what: str) -> TensorType:
    """A vector as long as the data's ``attrs.axis``, of the data's dtype."""
    axis = normalize_axis(attrs.axis, data.ndim, f"{what} axis")
    return TensorType((data.shape[axis],), data.dtype)


def channel_vectors_solve(arg_types: Sequence[Type], attrs: Attrs) -> Solved:
    """Every input after the data of ``nn.batch_norm`` / ``nn.layer_norm`` /
    ``nn.prelu`` (gamma, beta, moving mean and variance, alpha): a vector as long as
    the data's ``axis``."""
    data = known_data(arg_types)
    if data is None:
        return list(arg_types)
    out: Solved = list(arg_types)
    for i in range(1, len(out)):
        if isinstance(out[i], IncompleteType):
            out[i] = axis_vector(data, attrs, "normalisation")
    return out


# -- reference kernels ----------------------------------------------------------------------------


def result_dtype(attrs: Attrs, x: np.ndarray) -> np.dtype:
    """The result dtype: ``attrs.out_dtype`` when given, else the dtype of ``x``."""
    return np.dtype(check_dtype(attrs.out_dtype)) if attrs.out_dtype else x.dtype


def acc_dtype(out: np.dtype) -> np.dtype:
    """The accumulation type: float64 for every float, int64 for integers.

    A reference kernel is the oracle the backends are checked against, so its sums are
    rounded once, at the end: the result then depends neither on where BLAS cuts the
    matrix into blocks (channels with equal weights give equal outputs) nor on the order
    of the additions.
    """
    if out.kind == "f":
        return np.dtype(np.float64)
    return np.dtype(np.int64)


# -- constructors ---------------------------------------------------------------------------------


def opt_int(value: Any) -> int | None:
    """``value`` as an int, ``None`` kept (``channels``, ``units``)."""
    return None if value is None else int(value)


def dtype_attr(value: Any) -> str:
    """An ``out_dtype`` attribute: a checked dtype name, or ``""`` for "the input's"."""
    return check_dtype(value) if value else ""
