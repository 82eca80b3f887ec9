"""Reading ONNX protobufs: models from files, tensors to NumPy, attributes to Python.

Every failure here is a :class:`~relaykit.errors.FrontendError` that says what
was wrong and where (file, node, attribute), never a protobuf traceback.

>>> from onnx import helper, TensorProto
>>> t = helper.make_tensor("w", TensorProto.INT64, [2], [3, 4])
>>> tensor_to_numpy(t).tolist()
[3, 4]
>>> onnx_dtype_name(TensorProto.FLOAT)
'float32'
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.errors import FrontendError, MissingDependencyError
from relaykit.ir.types import DTYPES, check_dtype

from .limits import MAX_ELEMENTS, check_shape

__all__ = [
    "require_onnx",
    "load_model_proto",
    "onnx_dtype_name",
    "tensor_to_numpy",
    "attribute_value",
    "check_attribute_type",
    "check_text",
]


def require_onnx() -> Any:
    """The ``onnx`` module, or a clear error saying which extra to install."""
    try:
        import onnx
    except ImportError:  # pragma: no cover - onnx is in the test extra
        raise MissingDependencyError(
            "importing ONNX models needs the onnx package: pip install 'relaykit[onnx]'"
        ) from None
    return onnx


# ONNX TensorProto.DataType -> relaykit dtype name (the types relaykit's IR can hold).
_DTYPES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "uint64",
}

# The narrow types, held by relaykit when the optional ml_dtypes package is installed.
_ML_DTYPES = {
    16: "bfloat16",
    17: "float8_e4m3fn",
    18: "float8_e4m3fnuz",
    19: "float8_e5m2",
    20: "float8_e5m2fnuz",
    21: "uint4",
    22: "int4",
    23: "float4_e2m1fn",
    24: "float8_e8m0fnu",
    25: "uint2",
    26: "int2",
}
_DTYPES.update({k: v for k, v in _ML_DTYPES.items() if v in DTYPES})


def onnx_dtype_name(elem_type: int, where: str = "") -> str:
    """The relaykit dtype of an ONNX element type, or a FrontendError naming ``where``."""
    name = _DTYPES.get(int(elem_type))
    if name is None and int(elem_type) in _ML_DTYPES:
        check_dtype(_ML_DTYPES[int(elem_type)])  # raises: "pip install ml_dtypes"
    if name is None:
        onnx = require_onnx()
        try:
            onnx_name = onnx.TensorProto.DataType.Name(int(elem_type))
        except ValueError:
            onnx_name = f"<unknown type {elem_type}>"
        supported = ", ".join(sorted(set(_DTYPES.values())))
        raise FrontendError(
            f"{where + ': ' if where else ''}element type {onnx_name} is not supported "
            f"(relaykit tensors are {supported})"
        )
    return name


def onnx_elem_type(dtype: str) -> int:
    """The ONNX element type of a relaykit dtype name."""
    for k, v in _DTYPES.items():
        if v == dtype:
            return k
    raise FrontendError(f"dtype {dtype} has no ONNX element type")


def load_model_proto(model: Any) -> Any:
    """A ``ModelProto`` from a ``ModelProto``, a path, or serialized bytes.

    A truncated or foreign file gives a FrontendError naming the file.
    """
    onnx = require_onnx()
    from google.protobuf.message import DecodeError

    if isinstance(model, onnx.ModelProto):
        proto = model
        where = "the ModelProto"
    elif isinstance(model, (bytes, bytearray)):
        proto = onnx.ModelProto()
        where = "the given bytes"
        try:
            proto.ParseFromString(bytes(model))
        except (DecodeError, RuntimeError, ValueError) as err:
            raise FrontendError(f"{where} are not a valid ONNX model: {err}") from None
    elif isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        where = repr(path)
        if not os.path.exists(path):
            raise FrontendError(f"ONNX model file {path!r} does not exist")
        try:
            proto = onnx.load(path, load_external_data=True)
        except (DecodeError, RuntimeError, ValueError, OSError) as err:
            raise FrontendError(
                f"cannot read {path!r} as an ONNX model (is the file truncated, or not an "
                f"ONNX file?): {type(err).__name__}: {err}"
            ) from None
    else:
        raise FrontendError(
            f"from_onnx takes an onnx.ModelProto or a file path, got {type(model).__name__}"
        )
    if not proto.HasField("graph") or not proto.opset_import:
        missing = "graph" if not proto.HasField("graph") else "opset_import"
        raise FrontendError(
            f"{where} is not an ONNX model: it has no {missing} (a file of another protobuf "
            "message, or a truncated file?)"
        )
    check_text(proto)
    return proto


# bits per element of the packed narrow types (the others take a whole number of bytes)
_PACKED_BITS = {"int4": 4, "uint4": 4, "float4_e2m1fn": 4, "int2": 2, "uint2": 2}

# bits per element of every dtype
_BITS = {name: 8 * dt.itemsize for name, dt in DTYPES.items() if name not in _PACKED_BITS}

# the repeated fields a TensorProto may hold its values in
_DATA_FIELDS = ("float_data", "int32_data", "int64_data", "double_data", "uint64_data")


def _check_declared_size(tensor: Any, dtype: str, label: str) -> None:
    """Check the tensor's dims against the data it carries before anything is allocated:
    no negative or absurd dims, and as many bytes or values as the dims declare."""
    dims = tuple(tensor.dims)
    n = math.prod(dims)
    if not (0 < n <= MAX_ELEMENTS and min(dims, default=1) > 0):  # else: say what is wrong
        check_shape(dims, label)
    bits = _BITS.get(dtype) or _PACKED_BITS.get(dtype, 8)
    if tensor.HasField("raw_data"):
        want = (n * bits + 7) // 8
        if len(tensor.raw_data) != want:
            raise FrontendError(
                f"{label}: its dims {dims} declare {n} values ({want} bytes) but its raw_data "
                f"holds {len(tensor.raw_data)} bytes; the file is corrupted or truncated"
            )
        return
    stored = sum(len(getattr(tensor, f)) for f in _DATA_FIELDS)
    per_value = max(1, 32 // bits) if bits < 8 else 1  # packed types: several per int32
    if stored * per_value < n:
        raise FrontendError(
            f"{label}: its dims {dims} declare {n} values but it holds {stored}; the file "
            "is corrupted or truncated"
        )


def _not_text(value: Any) -> bool:
    return not isinstance(value, str)


def _first_not_text(values: Any) -> Any:
    """The first value that is not a ``str`` (protobuf's bytes for invalid UTF-8), or
    None; ``"".join`` is the fast check, the scan runs only when it fails."""
    try:
        "".join(values)
    except TypeError:
        return next(v for v in values if _not_text(v))
    return None


def check_text(model: Any) -> None:
    """Raise a FrontendError when a name of the model (of an opset, node, value,
    initializer or attribute, in any subgraph) is not valid UTF-8 text: protobuf hands
    such fields over as bytes, and a corrupted file has them."""
    bad = _first_not_text([entry.domain for entry in model.opset_import])
    if bad is not None:
        raise FrontendError(f"an opset domain is not valid UTF-8 text: {bad!r}")
    stack = [model.graph]
    while stack:
        g = stack.pop()
        names = [vi.name for vi in (*g.input, *g.output, *g.value_info)]
        names += [t.name for t in g.initializer]
        bad = _first_not_text(names)
        if bad is not None:
            raise FrontendError(f"a value name of graph {g.name!r} is not valid UTF-8: {bad!r}")
        for i, node in enumerate(g.node):
            attrs = node.attribute
            fields = [node.name, node.op_type, node.domain, *node.input, *node.output]
            if attrs:
                fields += [a.name for a in attrs]
            bad = _first_not_text(fields)
            if bad is not None:
                raise FrontendError(
                    f"node {i} of graph {g.name!r} has a name that is not valid UTF-8 text: "
                    f"{bad!r} (is the file corrupted?)"
                )
            for a in attrs:
                if a.type == 5:  # GRAPH
                    stack.append(a.g)
                elif a.type == 10:  # GRAPHS
                    stack.extend(a.graphs)


def tensor_to_numpy(tensor: Any, where: str = "") -> np.ndarray:
    """A ``TensorProto`` as a NumPy array of a relaykit dtype."""
    onnx = require_onnx()
    from onnx import numpy_helper

    label = where or f"tensor {tensor.name!r}"
    dtype = onnx_dtype_name(tensor.data_type, label)
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        raise FrontendError(
            f"{label} is stored in an external data file that was not loaded; load the model "
            "by its path so that relaykit can find the data next to it"
        )
    _check_declared_size(tensor, dtype, label)
    try:
        arr = numpy_helper.to_array(tensor)
    except Exception as err:
        raise FrontendError(f"{label} is malformed: {type(err).__name__}: {err}") from None
    expected = math.prod(int(d) for d in tensor.dims)
    if arr.size != expected:
        raise FrontendError(
            f"{label} has {arr.size} values but its dims {tuple(tensor.dims)} need {expected}"
        )
    return np.array(arr.astype(dtype, copy=False), order="C")


_ATTR_TYPE_NAMES = {
    0: "UNDEFINED",
    1: "FLOAT",
    2: "INT",
    3: "STRING",
    4: "TENSOR",
    5: "GRAPH",
    6: "FLOATS",
    7: "INTS",
    8: "STRINGS",
    9: "TENSORS",
    10: "GRAPHS",
    11: "SPARSE_TENSOR",
    12: "SPARSE_TENSORS",
    13: "TYPE_PROTO",
    14: "TYPE_PROTOS",
}


def check_attribute_type(attr: Any, expected: int, where: str) -> None:
    """Raise a FrontendError when ``attr`` does not have the schema's type."""
    if expected and int(attr.type) != int(expected):
        raise FrontendError(
            f"{where}: attribute {attr.name!r} must be of type "
            f"{_ATTR_TYPE_NAMES.get(int(expected), expected)}, got "
            f"{_ATTR_TYPE_NAMES.get(int(attr.type), attr.type)}"
        )


#: AttributeProto.type -> (attribute, where) -> its Python value.
_ATTR_READERS: dict[int, Callable[[Any, str], Any]] = {
    1: lambda a, w: float(a.f),
    2: lambda a, w: int(a.i),
    3: lambda a, w: a.s.decode("utf-8", errors="replace"),
    4: lambda a, w: tensor_to_numpy(a.t, w),
    5: lambda a, w: a.g,
    6: lambda a, w: tuple(float(v) for v in a.floats),
    7: lambda a, w: tuple(int(v) for v in a.ints),
    8: lambda a, w: tuple(s.decode("utf-8", errors="replace") for s in a.strings),
    9: lambda a, w: tuple(tensor_to_numpy(x, w) for x in a.tensors),
    10: lambda a, w: tuple(a.graphs),
    11: lambda a, w: a.sparse_tensor,
    13: lambda a, w: a.tp,
    14: lambda a, w: tuple(a.type_protos),
}


def attribute_value(attr: Any, where: str) -> Any:
    """The Python value of an ``AttributeProto``: numbers, strings, tuples, arrays, graphs."""
    t = int(attr.type)
    read = _ATTR_READERS.get(t)
    if read is not None:
        return read(attr, f"{where}: attribute {attr.name!r}")
    raise FrontendError(
        f"{where}: attribute {attr.name!r} has type "
        f"{_ATTR_TYPE_NAMES.get(t, t)}, which relaykit does not read"
    )
