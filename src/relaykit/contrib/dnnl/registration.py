"""Registering the dnnl backend: rules, pattern table, codegen and module loader.

Importing :mod:`relaykit.contrib.dnnl` registers everything, as importing
TVM's ``relay.op.contrib.dnnl`` did. Registries can be snapshot and restored
by tests (``relaykit.byoc.scoped_registries``), so :func:`ensure_registered`
re-installs whatever a restored registry dropped; ``partition_for_dnnl`` calls
it. A rule or pattern table the user registered for ``dnnl`` is kept.

>>> ensure_registered()
>>> from relaykit.op.contrib import get_pattern_table
>>> get_pattern_table("dnnl")[0][0]
'dnnl.conv2d_bias_sum_relu'
"""

from __future__ import annotations

from relaykit.backend.codegen.registry import codegen_registry, register_codegen
from relaykit.op.contrib import get_pattern_table, register_pattern_table
from relaykit.runtime.module import module_loaders, register_module_loader

from .codegen import dnnl_codegen
from .module import DnnlModule
from .partition import optimize_for_dnnl
from .patterns import pattern_table
from .rules import register_rules

__all__ = ["ensure_registered"]


def ensure_registered() -> None:
    """Install the dnnl rules, pattern table, codegen and module loader where missing."""
    register_rules()
    if get_pattern_table("dnnl") is None:
        register_pattern_table("dnnl", pattern_table)
    if codegen_registry.get("dnnl") is None:
        register_codegen("dnnl", dnnl_codegen, optimize=optimize_for_dnnl, per_module=True)
    if module_loaders.get(DnnlModule.type_key) is None:
        register_module_loader(DnnlModule.type_key, DnnlModule.load_blob)
