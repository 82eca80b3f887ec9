"""``ccompiler``: a C-source BYOC backend, as in TVM's BYOC tutorial, compiled by gcc.

It generates C for ``add``/``subtract``/``multiply``, ``nn.relu``,
``nn.bias_add``, ``nn.dense`` and ``nn.conv2d`` (and fused
conv2d/dense + bias (+ relu) composites), compiles each build's functions into
one shared library and runs it through ctypes. Its rules, patterns and codegen
(``relay.ext.ccompiler``) are fields of its record, :data:`BACKEND`, which relaykit
finds by name; importing the package registers nothing::

    from relaykit.backends import ccompiler
    mod = ccompiler.partition_for_ccompiler(mod, params)
    lib = relay.build(mod, target="llvm")
"""

from __future__ import annotations

from .backend import BACKEND, partition_for_ccompiler
from .codegen import codegen
from .rules import RULES, TARGET, pattern_table

__all__ = [
    "BACKEND",
    "RULES",
    "TARGET",
    "codegen",
    "partition_for_ccompiler",
    "pattern_table",
]
