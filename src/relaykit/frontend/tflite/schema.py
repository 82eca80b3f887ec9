"""Reading a TFLite flatbuffer (through the ``tflite`` package): operator names, tensors
with their shapes, dtypes, constant data and quantization parameters, and the builtin
options table of an operator.

>>> TENSOR_DTYPES[9], TENSOR_DTYPES[3]
('int8', 'uint8')
>>> activation_name(3)
'RELU6'
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from relaykit.errors import FrontendError

__all__ = [
    "TENSOR_DTYPES",
    "QuantInfo",
    "TensorInfo",
    "activation_name",
    "import_tflite",
    "operator_name",
    "read_options",
    "read_tensor",
    "root_model",
]

#: TFLite's ``TensorType`` enum -> NumPy dtype names
TENSOR_DTYPES: dict[int, str] = {
    0: "float32",
    1: "float16",
    2: "int32",
    3: "uint8",
    4: "int64",
    6: "bool",
    7: "int16",
    9: "int8",
    10: "float64",
    12: "uint64",
    15: "uint32",
    16: "uint16",
}

_ACTIVATIONS = {
    0: "NONE",
    1: "RELU",
    2: "RELU_N1_TO_1",
    3: "RELU6",
    4: "TANH",
    5: "SIGN_BIT",
}


def import_tflite() -> Any:
    """The ``tflite`` package, or a FrontendError saying how to install it."""
    try:
        return importlib.import_module("tflite")
    except ImportError as exc:
        raise FrontendError(
            "from_tflite needs the 'tflite' package (the flatbuffer schema of TFLite "
            "models); install it with `pip install relaykit[tflite]`"
        ) from exc


def root_model(model: Any) -> Any:
    """A ``tflite.Model`` from one, or from the bytes (or path) of a ``.tflite`` file."""
    if isinstance(model, str):
        with open(model, "rb") as f:
            model = f.read()
    if isinstance(model, (bytes, bytearray, memoryview)):
        tflite = import_tflite()
        return tflite.Model.GetRootAsModel(bytes(model), 0)
    if not hasattr(model, "Subgraphs") or not hasattr(model, "OperatorCodes"):
        raise FrontendError(
            f"from_tflite takes a tflite.Model (tflite.Model.GetRootAsModel(buf, 0)), the "
            f"bytes of a .tflite file or its path, got {type(model).__name__}"
        )
    return model


def activation_name(code: int) -> str:
    """The name of a fused activation function code."""
    return _ACTIVATIONS.get(int(code), f"activation {code}")


def operator_name(model: Any, op: Any) -> str:
    """The builtin name of ``op`` (``CONV_2D``), or ``CUSTOM:<code>`` for a custom op."""
    import_tflite()
    names = importlib.import_module("tflite.utils").BUILTIN_OPCODE2NAME
    code = model.OperatorCodes(op.OpcodeIndex())
    # operators numbered above 127 are in builtin_code; older files use the deprecated field
    builtin = max(int(code.DeprecatedBuiltinCode()), int(code.BuiltinCode()))
    name = names.get(builtin, f"BUILTIN_{builtin}")
    if name == "CUSTOM":
        custom = code.CustomCode()
        return "CUSTOM:" + (custom.decode() if isinstance(custom, bytes) else str(custom))
    return str(name)


def read_options(op: Any, options_class: str) -> Any:
    """The builtin options of ``op`` read as ``tflite.<options_class>`` (``None`` when the
    operator has none)."""
    table = op.BuiltinOptions()
    if table is None:
        return None
    cls = getattr(import_tflite(), options_class)
    opts = cls()
    opts.Init(table.Bytes, table.Pos)
    return opts


@dataclass(frozen=True)
class QuantInfo:
    """A tensor's quantization: ``scale`` and ``zero_point`` (scalars, or vectors along
    ``axis`` for per-axis quantization)."""

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int

    @property
    def per_axis(self) -> bool:
        return self.scale.size > 1


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a subgraph: index, name, static shape, dtype, constant data (or
    ``None``) and quantization (or ``None``)."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    data: np.ndarray | None
    quant: QuantInfo | None


def _quant(tensor: Any) -> QuantInfo | None:
    q = tensor.Quantization()
    if q is None or q.ScaleLength() == 0:
        return None
    scale: np.ndarray = np.asarray(q.ScaleAsNumpy(), np.float32).reshape(-1)
    zp: np.ndarray = (
        np.asarray(q.ZeroPointAsNumpy(), np.int64).reshape(-1)
        if q.ZeroPointLength()
        else np.zeros(scale.shape, np.int64)
    )
    if scale.size == 1:
        scale, zp = scale.reshape(()), zp.reshape(-1)[:1].reshape(())
    return QuantInfo(scale, zp, int(q.QuantizedDimension()))


def _buffer_bytes(model: Any, index: int) -> bytes | None:
    buf = model.Buffers(index)
    if buf is None:
        return None
    if buf.DataLength():
        return bytes(buf.DataAsNumpy().tobytes())
    offset = int(buf.Offset()) if hasattr(buf, "Offset") else 0
    size = int(buf.Size()) if hasattr(buf, "Size") else 0
    if offset > 1 and size:
        return bytes(model._tab.Bytes[offset : offset + size])
    return None


def read_tensor(model: Any, subgraph: Any, index: int) -> TensorInfo:
    """The tensor ``index`` of ``subgraph`` with its constant data read from its buffer."""
    t = subgraph.Tensors(index)
    name = t.Name().decode() if isinstance(t.Name(), bytes) else str(t.Name())
    code = int(t.Type())
    if code not in TENSOR_DTYPES:
        raise FrontendError(
            f"TFLite tensor {index} ('{name}') has element type code {code}, which relaykit "
            f"does not import (supported: {sorted(set(TENSOR_DTYPES.values()))})"
        )
    dtype = TENSOR_DTYPES[code]
    shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
    raw = _buffer_bytes(model, t.Buffer())
    data = None
    if raw is not None:
        data = np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy()
    return TensorInfo(index, name, shape, dtype, data, _quant(t))
