"""The ``jsonref`` backend record, found by name through :data:`relaykit.backends.BUILTIN`."""

from __future__ import annotations

from relaykit.backends import Backend
from relaykit.backends.common import RELAYKIT_VERSION, inference_optimize
from relaykit.byoc.pipeline import partitioner

from .codegen import codegen
from .rules import RULES, TARGET, pattern_table
from .runtime import JSONRefRuntime

__all__ = ["BACKEND", "partition_for_jsonref"]

#: Bind ``params``, simplify and fold, then partition for jsonref (TVM's
#: ``partition_for_<lib>``; :func:`relaykit.byoc.partition_for` with this target).
partition_for_jsonref = partitioner(TARGET)

BACKEND = Backend(
    TARGET,
    rules=RULES,
    patterns=pattern_table,
    optimize=inference_optimize,
    codegen=codegen,
    loaders={JSONRefRuntime.type_key: JSONRefRuntime.load_blob},
    description="regions serialised to a JSON graph, run by NumPy kernels",
    version=RELAYKIT_VERSION,
    exports={"partition_for_jsonref": partition_for_jsonref, "pattern_table": pattern_table},
)
