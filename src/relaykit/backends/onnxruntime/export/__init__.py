"""Relay -> ONNX: the exporter the ``onnxruntime`` backend compiles regions with."""

from __future__ import annotations

from .converters import CONVERTERS, static_shape
from .function import function_to_onnx

__all__ = ["CONVERTERS", "function_to_onnx", "static_shape"]
