"""Shape functions: an operator's output shapes computed at run time (Relay's ``FShapeFunc``).

A model with ``?`` dimensions (``relay.Any()``) or symbolic ones (``te.var``) only learns
its tensor sizes when it runs. An executor that allocates outputs before calling a kernel
(the VM) asks each operator for its output shapes through two attributes of the op table:

``"FShapeFunc"``
    ``shape_func(attrs, inputs_or_shapes) -> list[tuple[int, ...]]``: one shape per output
    (a tuple-typed result lists its fields' shapes in order, flattened). ``attrs`` is the
    call's :class:`~relaykit.ir.attrs.Attrs`.

``"TShapeDataDependent"``
    ``False`` (data-independent, the default): ``inputs_or_shapes`` holds the input
    *shapes* -- a tuple of ints per tensor input, a list of such tuples for a tuple input
    (``concatenate``). An entry may also be a NumPy array or a ``TensorType`` with static
    dims, which also tells the dtype. ``True`` (data-dependent, e.g. ``dyn.reshape``,
    ``argwhere``): the output shape depends on input *values*, so ``inputs_or_shapes``
    holds the input arrays.

Every registered operator gets a data-independent shape function derived from its type
relation (the relation applied to the run-time shapes, which are static); dynamic
operators register data-dependent ones. :func:`output_shapes` is the one call an executor
needs; :func:`define_shape_func` attaches a hand-written function.

>>> import relaykit.op  # registers the operators
>>> from relaykit.ir.op import default_registry
>>> from relaykit.op.define import make_attrs
>>> op = default_registry.get("nn.dense")
>>> op.get_attr("FShapeFunc")(make_attrs(op, {}), [(8, 4), (3, 4)])
[(8, 3)]
>>> output_shapes("concatenate", {"axis": 0}, [[(2, 3), (5, 3)]])
[(7, 3)]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from relaykit.errors import RelayTypeError
from relaykit.ir.attrs import Attrs
from relaykit.ir.op import Op, OpRegistry, default_registry
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.runtime.ndarray import NDArray

from .define import TypeRelError, make_attrs

__all__ = [
    "FSHAPE_FUNC",
    "DATA_DEPENDENT",
    "ShapeFunc",
    "output_shapes",
    "define_shape_func",
    "register_default_shape_funcs",
    "relation_shape_func",
    "shapes_of_type",
    "static_types",
]

FSHAPE_FUNC = "FShapeFunc"
DATA_DEPENDENT = "TShapeDataDependent"

ShapeFunc = Callable[[Attrs, Sequence[Any]], list[tuple[int, ...]]]

# The dtypes tried for a bare shape, in order: relations that check dtypes (indices must be
# integers, a condition bool) accept one of them. The pattern that worked is cached per op.
_DTYPE_TRIES = ("float32", "int32", "int64", "bool")
_DTYPE_CACHE: dict[str, tuple[str, ...]] = {}


def shapes_of_type(t: Type) -> list[tuple[int, ...]]:
    """The shapes of a static type: ``[shape]`` for a tensor, the fields' shapes (flattened)
    for a tuple."""
    if isinstance(t, TensorType):
        return [tuple(int(d) for d in t.shape)]
    if isinstance(t, TupleType):
        return [s for f in t.fields for s in shapes_of_type(f)]
    raise RelayTypeError(f"a shape function needs tensor or tuple types, got {t}")


def _is_shape(entry: Any) -> bool:
    return isinstance(entry, tuple | list) and all(isinstance(d, int | np.integer) for d in entry)


def _entry_type(entry: Any, dtype: str) -> Type:
    if isinstance(entry, Type):
        return entry
    if isinstance(entry, NDArray):
        entry = entry.numpy()
    if isinstance(entry, np.ndarray | np.generic):
        return TensorType(np.shape(entry), np.asarray(entry).dtype.name)
    if _is_shape(entry):
        return TensorType(tuple(int(d) for d in entry), dtype)
    if isinstance(entry, tuple | list):
        return TupleType([_entry_type(e, dtype) for e in entry])
    raise RelayTypeError(
        f"a shape function input must be a shape (tuple of ints), a list of shapes, an "
        f"array or a TensorType, got {entry!r}"
    )


def static_types(inputs: Sequence[Any], dtypes: Sequence[str]) -> list[Type]:
    """Types for shape-function inputs; a bare shape gets the dtype ``dtypes[i]``."""
    return [_entry_type(e, d) for e, d in zip(inputs, dtypes, strict=True)]


def _dtype_patterns(n: int) -> list[tuple[str, ...]]:
    base = ("float32",) * n
    out = [base]
    for i in range(n):
        for dt in _DTYPE_TRIES[1:]:
            out.append((*base[:i], dt, *base[i + 1 :]))
    out.extend((dt,) * n for dt in _DTYPE_TRIES[1:])
    return out


def relation_shape_func(op: Op) -> ShapeFunc:
    """The data-independent shape function of ``op`` derived from its type relation: the
    relation applied to the run-time (static) input shapes. A bare shape's dtype is found
    by trying common dtypes (give arrays or TensorTypes to fix them)."""

    def shape_func(attrs: Attrs, inputs_or_shapes: Sequence[Any]) -> list[tuple[int, ...]]:
        rel = op.get_attr("FTypeRelation")
        if rel is None:
            raise RelayTypeError(f"operator {op.name} has no type relation to derive shapes from")
        n = len(inputs_or_shapes)
        cached = _DTYPE_CACHE.get(op.name)
        tries = ([cached] if cached is not None and len(cached) == n else []) + _dtype_patterns(n)
        first: Exception | None = None
        for dtypes in tries:
            try:
                out = rel(static_types(inputs_or_shapes, dtypes), attrs)
            except TypeRelError as err:
                first = first or err
                continue
            _DTYPE_CACHE[op.name] = dtypes
            return shapes_of_type(out)
        raise RelayTypeError(
            f"shape function of {op.name}: inputs {list(inputs_or_shapes)} do not fit: {first}"
        )

    shape_func.__doc__ = f"Output shapes of {op.name} from its type relation."
    return shape_func


def define_shape_func(
    op_name: str,
    data_dependent: bool = False,
    level: int = 10,
    registry: OpRegistry = default_registry,
) -> Callable[[ShapeFunc], ShapeFunc]:
    """Decorator: ``fn(attrs, inputs_or_shapes)`` becomes ``op_name``'s ``FShapeFunc``
    (replacing the relation-derived one), with its ``TShapeDataDependent`` flag."""

    def wrap(fn: ShapeFunc) -> ShapeFunc:
        op = registry.get(op_name)
        if op.get_attr(FSHAPE_FUNC) is not None:
            op.reset_attr(FSHAPE_FUNC)
            op.reset_attr(DATA_DEPENDENT)
        op.set_attr(FSHAPE_FUNC, fn, level)
        op.set_attr(DATA_DEPENDENT, bool(data_dependent), level)
        return fn

    return wrap


def register_default_shape_funcs(registry: OpRegistry = default_registry) -> None:
    """Give every operator without a shape function the one derived from its relation."""
    for name in registry.names():
        op = registry.get(name)
        if op.get_attr(FSHAPE_FUNC) is None and op.get_attr("FTypeRelation") is not None:
            op.set_attr(FSHAPE_FUNC, relation_shape_func(op), 1)
            op.set_attr(DATA_DEPENDENT, False, 1)


def output_shapes(
    op: Op | str, attrs: Attrs | Mapping[str, Any] | None, inputs_or_shapes: Sequence[Any]
) -> list[tuple[int, ...]]:
    """The output shapes of one call of ``op``: its ``FShapeFunc`` (derived from the
    relation when none is registered). ``attrs`` may be a plain dict of the call's
    attributes (defaults filled in)."""
    if isinstance(op, str):
        op = default_registry.get(op)
    if not isinstance(attrs, Attrs):
        attrs = make_attrs(op, dict(attrs or {}))
    fn = op.get_attr(FSHAPE_FUNC) or relation_shape_func(op)
    if op.get_attr(DATA_DEPENDENT):
        inputs_or_shapes = [
            e.numpy() if isinstance(e, NDArray) else np.asarray(e) for e in inputs_or_shapes
        ]
    return [tuple(int(d) for d in s) for s in fn(attrs, inputs_or_shapes)]
