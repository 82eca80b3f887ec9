"""The ``ccompiler`` backend record, found by name through :data:`relaykit.backends.BUILTIN`."""

from __future__ import annotations

from relaykit.backends import Backend, Requirement
from relaykit.backends.common import RELAYKIT_VERSION, c_compiler_missing, inference_optimize
from relaykit.byoc.pipeline import partitioner

from .codegen import codegen
from .rules import RULES, TARGET, pattern_table

__all__ = ["BACKEND", "partition_for_ccompiler"]

#: Bind ``params``, simplify and fold, then partition for ccompiler (TVM's
#: ``partition_for_<lib>``; :func:`relaykit.byoc.partition_for` with this target).
partition_for_ccompiler = partitioner(TARGET)

BACKEND = Backend(
    TARGET,
    rules=RULES,
    patterns=pattern_table,
    optimize=inference_optimize,
    codegen=codegen,
    per_module=True,
    description="generated C (elementwise, dense, conv2d) built by the system C compiler",
    version=RELAYKIT_VERSION,
    exports={"partition_for_ccompiler": partition_for_ccompiler, "pattern_table": pattern_table},
    requires=Requirement(
        install="a C compiler on PATH (cc, gcc or clang)", check=c_compiler_missing
    ),
)
