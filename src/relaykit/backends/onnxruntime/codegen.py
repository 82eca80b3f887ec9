"""The ``onnxruntime`` codegen: a partitioned function -> an ONNX model -> a runtime module."""

from __future__ import annotations

from typing import Any

from relaykit.errors import CodegenError
from relaykit.execution.codegen.c_source import region_symbol
from relaykit.ir.expr import Function
from relaykit.ir.types import TensorType, TupleType
from relaykit.runtime.c_module import TensorSpec

from .export import function_to_onnx
from .runtime import OnnxRuntimeModule

__all__ = ["codegen"]


def _spec(ty: Any, what: str) -> TensorSpec:
    if not isinstance(ty, TensorType) or not all(isinstance(d, int) for d in ty.shape):
        raise CodegenError(f"{what} of an onnxruntime region must be a static tensor, got {ty}")
    return TensorSpec(tuple(int(d) for d in ty.shape), str(ty.dtype))


def codegen(func: Function) -> OnnxRuntimeModule:
    """Export ``func`` to ONNX and wrap it in an :class:`OnnxRuntimeModule` (its
    session is created on first use)."""
    symbol = region_symbol(func)
    model = function_to_onnx(func, symbol)
    ret = func.body.checked_type
    outs = list(ret.fields) if isinstance(ret, TupleType) else [ret]
    return OnnxRuntimeModule(
        symbol,
        model.SerializeToString(),
        [_spec(p.checked_type, f"input {p.name_hint}") for p in func.params],
        [_spec(t, f"output {i}") for i, t in enumerate(outs)],
    )
