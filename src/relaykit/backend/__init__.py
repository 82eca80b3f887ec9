"""Running models: the reference interpreter, ``relay.build`` and the graph executor.

- :mod:`.interpreter`: ``create_executor("debug")``, the reference semantics.
- :mod:`.build_module`: ``build`` (``relay.build``) and the factory module it returns.
- :mod:`.lower`, :mod:`.graph_plan`, :mod:`.memory_plan`: ``main`` as a flat,
  memory-planned plan; :mod:`.host_kernels` and :mod:`.graph_executor` run it.
- :mod:`.codegen`: the BYOC codegen interface and the C-source and JSON bases.

Names load on first use, so importing one part does not import the others.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "build": ".build_module",
    "GraphExecutorFactoryModule": ".build_module",
    "GraphExecutor": ".graph_executor",
    "GraphPlan": ".graph_plan",
    "create_executor": ".interpreter",
    "register_codegen": ".codegen.registry",
    "get_codegen": ".codegen.registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'relaykit.backend' has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
