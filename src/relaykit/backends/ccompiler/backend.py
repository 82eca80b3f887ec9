"""The ``ccompiler`` backend record, found by name through :data:`relaykit.backends.BUILTIN`."""

from __future__ import annotations

from relaykit.backends import Backend, Requirement
from relaykit.backends.common import RELAYKIT_VERSION, c_compiler_missing, inference_optimize

from .codegen import codegen
from .rules import RULES, TARGET, pattern_table

__all__ = ["BACKEND"]

BACKEND = Backend(
    TARGET,
    rules=RULES,
    patterns=pattern_table,
    optimize=inference_optimize,
    codegen=codegen,
    per_module=True,
    description="generated C (elementwise, dense, conv2d) built by the system C compiler",
    version=RELAYKIT_VERSION,
    requires=Requirement(
        install="a C compiler on PATH (cc, gcc or clang)", check=c_compiler_missing
    ),
)
