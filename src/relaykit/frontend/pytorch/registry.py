"""The one converter table of the PyTorch frontend, keyed by aten op name.

TorchScript nodes (``aten::conv2d``), ``torch.export`` / FX nodes
(``aten.conv2d.default``) and the graphs ``torch.compile`` hands its backends all
reach the same converter: :func:`op_key` turns every spelling into one key
(``"conv2d"``). Arguments arrive positionally, in the order of the aten schema
(FX keyword arguments are placed by the walker), as Relay expressions for
tensors and Python values (ints, floats, lists, ``None``, dtypes) for the rest.

This module does not import torch: the converters work on Relay expressions and
Python values only.

>>> op_key("aten::relu_"), op_key("aten.view_copy.default"), op_key("aten::_convolution")
('relu_', 'view_copy', '_convolution')
>>> "conv2d" in CONVERTERS and "scaled_dot_product_attention" in CONVERTERS
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from relaykit.errors import FrontendError, MissingDependencyError, RelayKitError
from relaykit.ir.expr import Constant, Expr, TupleWrapper, checked_type_or_none, const
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType
from relaykit.registry import Registry

__all__ = [
    "CONVERTERS",
    "Converter",
    "OpContext",
    "converter",
    "dtype_name",
    "lookup",
    "numpy_dtype_name",
    "op_key",
    "require_torch",
]

Converter = Callable[["OpContext", list[Any]], Any]

#: normalised aten op name -> converter
CONVERTERS: Registry[str, Converter] = Registry("PyTorch op converter")

# TorchScript passes dtypes as c10::ScalarType numbers.
_SCALAR_TYPES = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    11: "bool",
    15: "bfloat16",
}


def require_torch() -> Any:
    """The ``torch`` module, or a clear error saying which extra to install."""
    try:
        import torch
    except ImportError:
        raise MissingDependencyError(
            "the PyTorch frontend needs torch: pip install 'relaykit[torch]' (torch==2.13.0)"
        ) from None
    return torch


def op_key(name: str) -> str:
    """``aten::x``, ``aten.x.overload`` and ``x`` -> ``x``; other namespaces keep
    theirs (``quantized::conv2d``)."""
    if name.startswith("aten::"):
        name = name[len("aten::") :]
    elif name.startswith("aten."):
        name = name.split(".")[1]
    return name


def converter(*names: str) -> Callable[[Converter], Converter]:
    """Register the decorated function under every name in ``names``."""

    def decorate(fn: Converter) -> Converter:
        for name in names:
            CONVERTERS.register(name, fn)
        return fn

    return decorate


def lookup(key: str) -> tuple[Converter | None, bool]:
    """The converter of ``key`` and whether the op is the in-place form (``relu_``) of
    an op with a converter (the walker then rebinds the mutated input)."""
    fn = CONVERTERS.get(key)
    if fn is not None:
        return fn, False
    if key.endswith("_") and not key.endswith("__"):
        fn = CONVERTERS.get(key[:-1])
        if fn is not None:
            return fn, True
    return None, False


def dtype_name(value: Any, default: str | None = None) -> str | None:
    """A relaykit dtype name from a torch dtype, a TorchScript ScalarType number or a
    name; ``default`` when ``value`` is None."""
    if value is None:
        return default
    if isinstance(value, bool):
        raise FrontendError(f"expected a dtype, got {value!r}")
    if isinstance(value, int):
        if value not in _SCALAR_TYPES:
            raise FrontendError(f"dtype number {value} is not one relaykit supports")
        return _SCALAR_TYPES[value]
    text = str(value).removeprefix("torch.")
    return {"float": "float32", "double": "float64", "long": "int64", "int": "int32"}.get(
        text, text
    )


def is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


class OpContext:
    """What a converter may ask about its node: the types of its arguments, its
    place in the model (for errors) and the frontend's default dtype."""

    def __init__(self, op_name: str, where: str, default_dtype: str = "float32") -> None:
        self.op_name = op_name
        self.where = where
        self.default_dtype = default_dtype
        #: the output's shape as the tracer knows it (FX graphs: static sizes as ints,
        #: symbolic ones None), when it has one tensor output; else None
        self.out_shape: tuple[int | None, ...] | None = None
        #: the values of the model's parameters, for converters that need a constant
        #: (the scale of a quantize node stored as a buffer)
        self.constants: Mapping[Any, np.ndarray] = {}

    def fail(self, message: str) -> FrontendError:
        return FrontendError(f"{self.where}: {message}")

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

    def shape(self, value: Any) -> tuple[int, ...]:
        return self.type_of(self.expr(value)).shape

    def dtype(self, value: Any) -> str:
        if isinstance(value, Expr):
            return self.type_of(value).dtype
        return self.scalar_dtype(value)

    def ndim(self, value: Any) -> int:
        return len(self.shape(value))

    def scalar_dtype(self, value: Any) -> str:
        if isinstance(value, bool):
            return "bool"
        if isinstance(value, int):
            return "int64"
        if isinstance(value, float):
            return self.default_dtype
        return self.dtype(self.expr(value))

    def expr(self, value: Any, dtype: str | None = None) -> Expr:
        """``value`` as a Relay expression: tensors (torch tensors, NumPy arrays)
        become constants; Python numbers become scalar constants of ``dtype`` (or of
        the type torch would give them)."""
        if isinstance(value, TupleWrapper):
            value = value[0]
        if isinstance(value, Expr):
            return value
        if value is None:
            raise self.fail("expected a tensor, got None")
        if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
            value = tensor_to_numpy(value)
        if isinstance(value, (list, tuple)) and any(isinstance(v, Expr) for v in value):
            raise self.fail("expected a tensor, got a list of tensors")
        arr = np.asarray(value)
        if dtype is None:
            python_number = isinstance(value, (bool, int, float)) and arr.ndim == 0
            dtype = self.scalar_dtype(value) if python_number else numpy_dtype_name(arr)
        return const(arr.astype(dtype), dtype)

    def axis(self, value: Any, dim: int) -> int:
        """``dim`` as a non-negative axis of ``value``."""
        n = self.ndim(value)
        d = int(dim)
        if not -max(n, 1) <= d < max(n, 1):
            raise self.fail(f"dimension {d} is out of range for a tensor of rank {n}")
        return d + n if d < 0 else d


def numpy_dtype_name(arr: np.ndarray) -> str:
    return "bool" if arr.dtype == np.bool_ else arr.dtype.name


def tensor_to_numpy(tensor: Any) -> np.ndarray:
    """A torch tensor's data as a NumPy array (shared when torch allows it)."""
    t = tensor.detach()
    if str(t.dtype) == "torch.bfloat16":
        raise FrontendError("bfloat16 tensors are not supported: convert the model to float32")
    if t.device.type != "cpu":
        t = t.cpu()
    if getattr(t, "is_quantized", False):
        raise FrontendError("quantized tensors are not supported yet (a later issue)")
    return t.resolve_conj().resolve_neg().contiguous().numpy()


def const_value(value: Any) -> Any:
    """The Python/NumPy value of a constant argument, or None when it is not one."""
    if isinstance(value, Constant):
        return value.data.numpy()
    if isinstance(value, Expr):
        return None
    return value


def as_int_list(value: Any, n: int | None = None) -> list[int]:
    """A list of ints (a single int repeated ``n`` times)."""
    if isinstance(value, Constant):
        value = value.data.numpy().tolist()
    if isinstance(value, (int, np.integer)):
        return [int(value)] * (n or 1)
    return [int(v) for v in value]
