"""``onnxruntime``: regions exported to ONNX and run by ONNX Runtime.

Each partitioned function becomes one ONNX model (:func:`.export.function_to_onnx`)
run by one ``InferenceSession``; the record, :data:`BACKEND`, is found by name::

    from relaykit.byoc import partition_for
    mod = partition_for(mod, "onnxruntime", params)
    lib = relay.build(mod, target="llvm")
"""

from __future__ import annotations

from .backend import BACKEND, partition_for_onnxruntime
from .codegen import codegen
from .export import function_to_onnx
from .rules import RULES, TARGET, check_call
from .runtime import OnnxRuntimeModule

__all__ = [
    "BACKEND",
    "RULES",
    "TARGET",
    "OnnxRuntimeModule",
    "check_call",
    "codegen",
    "function_to_onnx",
    "partition_for_onnxruntime",
]
