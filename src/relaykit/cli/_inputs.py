"""The inputs an ONNX model declares, and ``--input-shapes`` checked against them.

A shape given on the command line must name a graph input (not an initializer), have
its rank, positive sizes, and the sizes it declares statically; only its symbolic
dimensions (``N``, ``batch``, ``?``) are the user's to choose. A mistake is a
:class:`~relaykit.errors.UsageError` naming the input and its declared shape.

>>> from onnx import TensorProto, helper
>>> graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
>>> inputs = declared_inputs(helper.make_model(graph))
>>> str(inputs[0]), shapes_example(inputs)
('x: float32[N, 4]', 'x:1x4')
>>> check_input_shapes(inputs, {"x": (2, 5)})
Traceback (most recent call last):
    ...
relaykit.errors.UsageError: --input-shapes x:2x5: input 'x' is declared float32[N, 4]; \
dimension 1 is 4, not 5
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from relaykit.errors import RelayKitError, UsageError
from relaykit.frontend.onnx.proto import onnx_dtype_name

__all__ = ["DeclaredInput", "declared_inputs", "check_input_shapes", "shapes_example"]


@dataclass(frozen=True)
class DeclaredInput:
    """A graph input as the model declares it: each dimension a size or a symbol
    (``"?"`` when unnamed); ``dims`` is None for a tensor of unknown rank or an input
    that is not a tensor (a sequence, an optional)."""

    name: str
    dtype: str
    dims: tuple[int | str, ...] | None

    @property
    def symbolic(self) -> bool:
        """Whether a dimension is left to the user (or the rank is unknown)."""
        return self.dims is None or any(isinstance(d, str) for d in self.dims)

    @property
    def type_text(self) -> str:
        """``float32[N, 4]`` (``[?...]``: a rank the model does not declare)."""
        shape = "[?...]" if self.dims is None else f"[{', '.join(map(str, self.dims))}]"
        return f"{self.dtype}{shape}"

    def __str__(self) -> str:
        return f"{self.name}: {self.type_text}"


def _dtype(elem_type: int) -> str:
    try:
        return onnx_dtype_name(elem_type) if elem_type else "float32"
    except RelayKitError:
        return f"type{elem_type}"


def declared_inputs(proto: Any) -> list[DeclaredInput]:
    """The graph inputs of ``proto`` (an ``onnx.ModelProto``) that are not initializers."""
    inits = {t.name for t in proto.graph.initializer}
    out = []
    for vi in proto.graph.input:
        if vi.name in inits:
            continue
        if vi.type.WhichOneof("value") != "tensor_type":
            out.append(DeclaredInput(vi.name, vi.type.WhichOneof("value") or "value", None))
            continue
        tt = vi.type.tensor_type
        dims: tuple[int | str, ...] | None = None
        if tt.HasField("shape"):
            dims = tuple(
                int(d.dim_value)
                if d.HasField("dim_value") and d.dim_value >= 0
                else (d.dim_param or "?")
                for d in tt.shape.dim
            )
        out.append(DeclaredInput(vi.name, _dtype(tt.elem_type), dims))
    return out


def _item(name: str, dims: tuple[int, ...]) -> str:
    shown = f'"{name}"' if any(c in name for c in " :;[") else name
    return f"{shown}:{'x'.join(map(str, dims)) if dims else '[]'}"


def _listing(inputs: list[DeclaredInput]) -> str:
    return ", ".join(str(i) for i in inputs) if inputs else "none"


def check_input_shapes(inputs: list[DeclaredInput], shapes: Mapping[str, tuple[int, ...]]) -> None:
    """Refuse a shape for a name that is no input, of the wrong rank, with a size below 1,
    or contradicting a size the model declares (a UsageError naming the input)."""
    by_name = {i.name: i for i in inputs}
    for name, dims in shapes.items():
        item = _item(name, dims)
        declared = by_name.get(name)
        if declared is None:
            raise UsageError(
                f"--input-shapes {item}: the model has no input {name!r}; its inputs are "
                f"{_listing(inputs)}"
            )
        if declared.dims is None:
            if declared.dtype in ("sequence_type", "optional_type", "map_type"):
                raise UsageError(
                    f"--input-shapes {item}: input {name!r} is a {declared.dtype[:-5]}, not a "
                    "tensor; give it with the Python API (from_onnx(model, shape=...))"
                )
            if any(d < 1 for d in dims):
                raise UsageError(
                    f"--input-shapes {item}: input {name!r} is declared {declared.type_text}; "
                    "sizes must be at least 1"
                )
            continue
        where = f"--input-shapes {item}: input {name!r} is declared {declared.type_text}"
        if len(dims) != len(declared.dims):
            raise UsageError(f"{where}, {len(declared.dims)} dimensions, not {len(dims)}")
        for k, (want, got) in enumerate(zip(declared.dims, dims, strict=True)):
            if isinstance(want, int) and want != got:
                raise UsageError(f"{where}; dimension {k} is {want}, not {got}")
            if got < 1 and not isinstance(want, int):
                raise UsageError(f"{where}; dimension {k} ({want}) must be at least 1, not {got}")


def shapes_example(inputs: list[DeclaredInput]) -> str:
    """An ``--input-shapes`` value for the inputs with symbolic dimensions (1 for each
    symbol), in the model's names and ranks: ``"ids:1x128 mask:1x128"``."""
    items = []
    for i in inputs:
        if i.dims is None or not i.symbolic:
            continue
        items.append(_item(i.name, tuple(d if isinstance(d, int) else 1 for d in i.dims)))
    text = " ".join(items)
    return f"'{text}'" if len(items) > 1 or " " in text or '"' in text else text
