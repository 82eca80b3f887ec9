"""The ``jsonref`` backend record, found by name through :data:`relaykit.backends.BUILTIN`."""

from __future__ import annotations

from relaykit.backends import Backend
from relaykit.backends.common import RELAYKIT_VERSION, inference_optimize

from .codegen import codegen
from .rules import RULES, TARGET, pattern_table
from .runtime import JSONRefRuntime

__all__ = ["BACKEND"]

BACKEND = Backend(
    TARGET,
    rules=RULES,
    patterns=pattern_table,
    optimize=inference_optimize,
    codegen=codegen,
    loaders={JSONRefRuntime.type_key: JSONRefRuntime.load_blob},
    description="regions serialised to a JSON graph, run by NumPy kernels",
    version=RELAYKIT_VERSION,
)
