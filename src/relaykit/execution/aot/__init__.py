"""Ahead-of-time C for a whole static model (TVM's AOT executor with the C interface).

``relay.build(mod, target="c", executor=Executor("aot", {"interface-api": "c",
"unpacked-api": True}), runtime=Runtime("crt"), params=params)`` lowers ``main`` to the
graph executor's memory-planned plan and writes it as portable C99 (:mod:`.program`),
one kernel per operator or fused chain, each from the emitter registered for its
operator (:data:`~relaykit.execution.aot.emit.c_emitters`); ``tvm.micro.
export_model_library_format`` writes the Model Library Format (:mod:`.module`).
"""

from . import (  # noqa: F401  (register the C emitters)
    einsum,
    elementwise,
    indexing,
    layout,
    linalg,
    nn,
    resample,
    sorting,
    spatial,
)
from .build import build_aot
from .emit import CBuf, KernelContext, c_emitters, register_c_emitter
from .module import AOTExecutorFactoryModule, export_model_library_format, mlf_metadata
from .program import AOTProgram, generate_program, sanitize

__all__ = [
    "build_aot",
    "AOTExecutorFactoryModule",
    "AOTProgram",
    "CBuf",
    "KernelContext",
    "c_emitters",
    "register_c_emitter",
    "export_model_library_format",
    "generate_program",
    "mlf_metadata",
    "sanitize",
]
