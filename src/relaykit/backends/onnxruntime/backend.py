"""The ``onnxruntime`` backend record, found by name through :data:`relaykit.backends.BUILTIN`.

Loading the record imports neither onnx nor onnxruntime; they are imported when a
region is exported or run (or by the ``requires`` check).
"""

from __future__ import annotations

from relaykit.backends import Backend, Requirement
from relaykit.backends.common import inference_optimize
from relaykit.byoc.pipeline import partitioner

from .codegen import codegen
from .rules import RULES, TARGET, check_call
from .runtime import OnnxRuntimeModule, import_onnxruntime, onnxruntime_version

__all__ = ["BACKEND", "partition_for_onnxruntime"]

#: Bind ``params``, simplify and fold, then partition for onnxruntime.
partition_for_onnxruntime = partitioner(TARGET)


def _missing() -> str | None:
    try:
        import_onnxruntime()
        import onnx  # noqa: F401
    except ImportError:
        return "onnxruntime or onnx is not installed"
    return None


BACKEND = Backend(
    TARGET,
    rules=RULES,
    optimize=inference_optimize,
    codegen=codegen,
    # A region is one ONNX model: it may hold another backend's composite (exported as
    # its body), so measured placement may offer it any composite whose operators it runs.
    options={"inline_composites": True},
    loaders={OnnxRuntimeModule.type_key: OnnxRuntimeModule.load_blob},
    description="regions exported to ONNX, each run by one onnxruntime InferenceSession",
    version=onnxruntime_version(),
    requires=Requirement(extra="onnxruntime", check=_missing),
    exports={"partition_for_onnxruntime": partition_for_onnxruntime, "check_call": check_call},
)
