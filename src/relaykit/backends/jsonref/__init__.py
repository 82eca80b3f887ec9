"""``jsonref``: a JSON-graph BYOC backend whose runtime runs the graph with its own kernels.

Each partitioned function is serialised to JSON (constants kept as arrays);
the runtime module parses it once, binds its kernels to the executor's buffers
once, and then just runs them. Its rules, patterns, codegen (``relay.ext.jsonref``)
and runtime loader are fields of its record, :data:`BACKEND`, which relaykit finds by
name; importing the package registers nothing::

    from relaykit.backends import jsonref
    mod = jsonref.partition_for_jsonref(mod, params)
    lib = relay.build(mod, target="llvm")
"""

from __future__ import annotations

from .backend import BACKEND, partition_for_jsonref
from .codegen import codegen
from .rules import RULES, TARGET, pattern_table
from .runtime import JSONRefRuntime

__all__ = [
    "BACKEND",
    "RULES",
    "TARGET",
    "JSONRefRuntime",
    "codegen",
    "partition_for_jsonref",
    "pattern_table",
]
