"""``ccompiler``: a C-source BYOC backend, as in TVM's BYOC tutorial, compiled by gcc.

It generates C for ``add``/``subtract``/``multiply``, ``nn.relu``,
``nn.bias_add``, ``nn.dense`` and ``nn.conv2d`` (and fused
conv2d/dense + bias (+ relu) composites), compiles each build's functions into
one shared library and runs it through ctypes. Importing the package
registers its rules, patterns and codegen (``relay.ext.ccompiler``)::

    from relaykit.backends import ccompiler
    mod = ccompiler.partition_for_ccompiler(mod, params)
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

__all__ = [
    "BACKEND",
    "RULES",
    "TARGET",
    "codegen",
    "register",
    "partition_for_ccompiler",
    "pattern_table",
]


def register() -> None:
    """Register ccompiler's backend record and install its rules (call again after a test
    restored the registries; relaykit finds the backend by name without it)."""
    _common.register(BACKEND)


def partition_for_ccompiler(
    mod: IRModule, params: Mapping[str, Any] | None = None, **options: Any
) -> IRModule:
    """Bind ``params``, simplify and fold, then partition ``mod`` for ccompiler."""
    register()
    return partition_for_target(mod, TARGET, params, **options)


register()
