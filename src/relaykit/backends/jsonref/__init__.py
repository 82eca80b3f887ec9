"""``jsonref``: a JSON-graph BYOC backend whose runtime runs the graph with its own kernels.

Each partitioned function is serialised to JSON (constants kept as arrays);
the runtime module parses it once, binds its kernels to the executor's buffers
once, and then just runs them. Importing the package registers its rules,
patterns, codegen (``relay.ext.jsonref``) and runtime loader::

    from relaykit.backends import jsonref
    mod = jsonref.partition_for_jsonref(mod, params)
    lib = relay.build(mod, target="llvm")
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relaykit.backends import common as _common
from relaykit.execution.codegen.registry import partition_for_target
from relaykit.ir.module import IRModule

from .backend import BACKEND
from .codegen import codegen
from .rules import RULES, TARGET, pattern_table
from .runtime import JSONRefRuntime

__all__ = [
    "BACKEND",
    "RULES",
    "TARGET",
    "JSONRefRuntime",
    "pattern_table",
    "codegen",
    "register",
    "partition_for_jsonref",
]


def register() -> None:
    """Register jsonref's backend record and install its rules (call again after a test
    restored the registries; relaykit finds the backend by name without it)."""
    _common.register(BACKEND)


def partition_for_jsonref(
    mod: IRModule, params: Mapping[str, Any] | None = None, **options: Any
) -> IRModule:
    """Bind ``params``, simplify and fold, then partition ``mod`` for jsonref."""
    register()
    return partition_for_target(mod, TARGET, params, **options)


register()
