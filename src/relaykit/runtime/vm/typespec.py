"""Type specs: the JSON form of the types the machine checks values against.

A spec is ``{"t": "tensor", "shape": [int | null, ...], "dtype": str}``, ``{"t": "tuple",
"fields": [spec, ...]}``, or anything else for "not checked"; ``null`` is a dynamic
dimension.

>>> type_spec_str({"t": "tensor", "shape": [2, None], "dtype": "float32"})
'Tensor[(2, ?), float32]'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.errors import ExecutionError
from relaykit.runtime.container import ADT

__all__ = ["type_spec_str", "check_shape", "shape_checker", "static_shape", "dtype_name"]


def type_spec_str(spec: Any) -> str:
    """A type spec as Relay prints the type (``?`` for a dynamic dimension)."""
    if not isinstance(spec, dict):
        return "?"
    if spec.get("t") == "tensor":
        dims = ", ".join("?" if d is None else str(d) for d in spec["shape"])
        return f"Tensor[({dims}), {spec['dtype']}]" if spec["shape"] else str(spec["dtype"])
    if spec.get("t") == "tuple":
        return "(" + ", ".join(type_spec_str(f) for f in spec["fields"]) + ")"
    return "?"


def static_shape(spec: Any) -> tuple[int, ...] | None:
    if isinstance(spec, dict) and spec.get("t") == "tensor":
        shape = spec["shape"]
        if all(isinstance(d, int) for d in shape):
            return tuple(shape)
    return None


_DTYPE_NAMES: dict[Any, str] = {}


def dtype_name(dtype: Any) -> str:
    """``dtype.name``, which NumPy computes in Python on every read: cached."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = dtype.name
    return name


def check_shape(value: Any, spec: Any, where: str) -> None:
    """A run-time value against a type spec; dynamic dimensions match any size.

    A mismatch is an :class:`ExecutionError` naming ``where`` and both shapes.
    """
    if not isinstance(spec, dict):
        return
    t = spec.get("t")
    if t == "tensor":
        shape = getattr(value, "shape", None)
        if shape is None:
            raise ExecutionError(
                f"{where}: expected a tensor {type_spec_str(spec)}, got {type(value).__name__}"
            )
        want = spec["shape"]
        dtype = getattr(value, "dtype", None)
        if dtype is not None and dtype_name(dtype) != spec["dtype"]:
            raise ExecutionError(
                f"{where}: got a {dtype_name(dtype)} tensor of shape {tuple(shape)}, "
                f"the type says {type_spec_str(spec)}"
            )
        if len(shape) != len(want) or any(
            w is not None and w != d for w, d in zip(want, shape, strict=False)
        ):
            raise ExecutionError(
                f"{where}: shape mismatch at run time: got {tuple(shape)}, the type says "
                f"{type_spec_str(spec)}"
            )
    elif t == "tuple":
        fields = value.fields if isinstance(value, ADT) else value
        if not isinstance(fields, (list, tuple)) or len(fields) != len(spec["fields"]):
            raise ExecutionError(
                f"{where}: expected a tuple {type_spec_str(spec)}, got {type(value).__name__}"
            )
        for i, (v, s) in enumerate(zip(fields, spec["fields"], strict=True)):
            check_shape(v, s, f"{where} field {i}")


def shape_checker(spec: Any, where: str) -> Callable[[Any], None]:
    """:func:`check_shape` for one spec, with a fast path for static tensor types."""
    static = static_shape(spec)
    if static is None:
        if isinstance(spec, dict) and spec.get("t") == "tensor":
            return _dynamic_checker(spec, where)
        return lambda value: check_shape(value, spec, where)
    want_dtype = np.dtype(spec["dtype"])

    def check(value: Any) -> None:
        if (
            type(value) is not np.ndarray
            or value.shape != static
            or (value.dtype is not want_dtype and value.dtype != want_dtype)
        ):
            check_shape(value, spec, where)

    return check


def _dynamic_checker(spec: Any, where: str) -> Callable[[Any], None]:
    """:func:`check_shape` for a tensor type with dynamic dimensions (the fast path
    compares the rank, the dtype and the static dimensions)."""
    want_dtype = np.dtype(spec["dtype"])
    rank = len(spec["shape"])
    fixed = [(i, d) for i, d in enumerate(spec["shape"]) if d is not None]

    def check(value: Any) -> None:
        if (
            type(value) is not np.ndarray
            or value.ndim != rank
            or (value.dtype is not want_dtype and value.dtype != want_dtype)
        ):
            check_shape(value, spec, where)
            return
        shape = value.shape
        for i, d in fixed:
            if shape[i] != d:
                check_shape(value, spec, where)

    return check
