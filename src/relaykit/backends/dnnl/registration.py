"""Registering the dnnl backend: its record (rules, pattern table, codegen, module loader).

Importing :mod:`relaykit.backends.dnnl` registers everything, as importing
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

from relaykit.backends import register_backend
from relaykit.byoc.targets import install_rules
from relaykit.runtime.registry import register_func

from . import tvm_api
from .backend import BACKEND, _onednn_missing

__all__ = ["ensure_registered"]


def ensure_registered() -> None:
    """Register the dnnl backend record and install its rules where missing (a rule the
    user registered for an operator is kept); with oneDNN installed, register TVM's
    ``runtime.DNNLJSONRuntimeCreate`` too."""
    register_backend(BACKEND, override=True)
    install_rules(BACKEND)
    if _onednn_missing() is None:
        register_func(tvm_api.RUNTIME_CREATE, tvm_api.create_runtime_module, override=True)
