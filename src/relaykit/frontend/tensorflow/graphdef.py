"""Reading TensorFlow ``GraphDef`` protobufs without importing TensorFlow: element
types, ``TensorProto`` values as NumPy arrays, node attributes as Python values and
input references (``"name:1"``, ``"^control"``).

Any object with the fields of TensorFlow's protobuf messages works (a ``GraphDef``
from ``tf.compat.v1``, one parsed with another protobuf runtime, a duck-typed copy).

>>> split_input("conv/Relu:1"), split_input("^init"), split_input("x")
(('conv/Relu', 1), None, ('x', 0))
>>> tf_dtype_name(1), tf_dtype_name(101)
('float32', 'float32')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.errors import FrontendError

__all__ = [
    "attr_value",
    "node_attrs",
    "split_input",
    "tensor_to_numpy",
    "tf_dtype_name",
]

# tensorflow/core/framework/types.proto: DataType -> element type name
_DTYPES: dict[int, str] = {
    1: "float32",
    2: "float64",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    14: "bfloat16",
    17: "uint16",
    18: "complex128",
    19: "float16",
    20: "resource",
    21: "variant",
    22: "uint32",
    23: "uint64",
}

# which repeated field of a TensorProto holds values of each element type
_VALUE_FIELDS: dict[str, str] = {
    "float32": "float_val",
    "float64": "double_val",
    "int32": "int_val",
    "int16": "int_val",
    "int8": "int_val",
    "uint8": "int_val",
    "uint16": "int_val",
    "int64": "int64_val",
    "uint32": "uint32_val",
    "uint64": "uint64_val",
    "bool": "bool_val",
    "float16": "half_val",
    "complex64": "scomplex_val",
    "complex128": "dcomplex_val",
}


def tf_dtype_name(enum: int, where: str = "the graph") -> str:
    """The element type name of TensorFlow's ``DataType`` enum (reference types, enum +
    100, are their value type)."""
    code = int(enum)
    if code > 100:
        code -= 100
    name = _DTYPES.get(code)
    if name is None:
        raise FrontendError(
            f"{where}: TensorFlow element type {enum} (quantized or unknown) is not supported; "
            "convert the model to float or integer types"
        )
    return name


def split_input(ref: str) -> tuple[str, int] | None:
    """``"node:k"`` -> ``(node, k)``; ``"node"`` -> ``(node, 0)``; a control input
    (``"^node"``) -> None."""
    if ref.startswith("^"):
        return None
    name, sep, index = ref.rpartition(":")
    if sep and index.isdigit():
        return name, int(index)
    return ref, 0


def tensor_to_numpy(tensor: Any, where: str = "the graph") -> np.ndarray:
    """A ``TensorProto``'s value (strings as an object array of ``bytes``)."""
    dtype = tf_dtype_name(tensor.dtype, where)
    shape = [int(d.size) for d in tensor.tensor_shape.dim]
    size = int(np.prod(shape)) if shape else 1
    if dtype == "string":
        vals = list(tensor.string_val)
        strings = np.empty(len(vals), dtype=object)
        strings[:] = vals
        return _fill(strings, size, where).reshape(shape)
    if dtype in ("resource", "variant"):
        raise FrontendError(f"{where}: a {dtype} constant cannot be imported")
    np_dtype = np.dtype("uint16") if dtype == "bfloat16" else np.dtype(dtype)
    arr: Any
    if tensor.tensor_content:
        arr = np.frombuffer(tensor.tensor_content, dtype=np_dtype).copy()
    elif dtype == "bfloat16":
        arr = np.asarray(list(tensor.half_val), dtype=np.uint16)
    elif dtype == "float16":
        arr = np.asarray(list(tensor.half_val), dtype=np.uint16).view(np.float16)
    elif dtype.startswith("complex"):
        flat = np.asarray(list(getattr(tensor, _VALUE_FIELDS[dtype])))
        arr = (flat[0::2] + 1j * flat[1::2]).astype(np_dtype)
    else:
        arr = np.asarray(list(getattr(tensor, _VALUE_FIELDS[dtype])), dtype=np_dtype)
    arr = _fill(arr, size, where).reshape(shape)
    if dtype == "bfloat16":  # widen: relaykit computes bfloat16 constants as float32
        arr = (arr.astype(np.uint32) << 16).view(np.float32)
    return arr


def _fill(arr: np.ndarray, size: int, where: str) -> np.ndarray:
    """TensorFlow stores a constant of repeated values once (or its last value repeats)."""
    if arr.size == size:
        return arr
    if arr.size == 0:
        return np.zeros(size, dtype=arr.dtype) if arr.dtype != object else np.full(size, b"")
    if arr.size > size:
        raise FrontendError(f"{where}: the constant holds {arr.size} values for {size} elements")
    return np.concatenate([arr, np.full(size - arr.size, arr[-1], dtype=arr.dtype)])


def _shape_value(shape: Any) -> list[int] | None:
    if shape.unknown_rank:
        return None
    return [int(d.size) for d in shape.dim]


def _list_value(lst: Any, where: str) -> list[Any]:
    for field in ("s", "i", "f", "b", "type", "shape", "tensor"):
        items = list(getattr(lst, field))
        if not items:
            continue
        if field == "s":
            return [s.decode("utf-8", errors="replace") for s in items]
        if field == "type":
            return [tf_dtype_name(t, where) for t in items]
        if field == "shape":
            return [_shape_value(s) for s in items]
        if field == "tensor":
            return [tensor_to_numpy(t, where) for t in items]
        return items
    return []


def attr_value(value: Any, where: str = "the graph") -> Any:
    """One ``AttrValue`` as a Python value: strings decoded, types as dtype names,
    shapes as lists (None for an unknown rank, -1 for an unknown size), tensors as
    arrays, lists as lists."""
    kind = value.WhichOneof("value")
    if kind == "s":
        return value.s.decode("utf-8", errors="replace")
    if kind in ("i", "f", "b"):
        return getattr(value, kind)
    if kind == "type":
        return tf_dtype_name(value.type, where)
    if kind == "shape":
        return _shape_value(value.shape)
    if kind == "tensor":
        return tensor_to_numpy(value.tensor, where)
    if kind == "func":
        return value.func.name
    if kind == "list":
        return _list_value(value.list, where)
    return None


def node_attrs(node: Any) -> dict[str, Any]:
    """A ``NodeDef``'s attributes as Python values."""
    where = f"node {node.name!r} ({node.op})"
    return {key: attr_value(node.attr[key], where) for key in node.attr}
