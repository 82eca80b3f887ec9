"""Running models: the reference interpreter, ``relay.build`` and the graph executor.

- :mod:`.evaluator`: the one explicit-stack evaluation machine, with hooks.
- :mod:`.interpreter`: ``create_executor("debug")``, the reference semantics.
- :mod:`.build_module`: ``build`` (``relay.build``) and the factory module it returns.
- :mod:`.lower`, :mod:`.graph_plan`, :mod:`.memory_plan`: ``main`` as a flat,
  memory-planned plan; :mod:`.host_kernels` and :mod:`.graph_executor` run it.
- :mod:`.codegen`: the BYOC codegen interface and the C-source and JSON bases.
"""

from __future__ import annotations

from .build_module import GraphExecutorFactoryModule, build
from .codegen.registry import get_codegen, register_codegen
from .evaluator import Evaluator
from .graph_executor import GraphExecutor
from .graph_plan import GraphPlan
from .interpreter import Interpreter, create_executor
from .lower import PlanLowering

__all__ = [
    "Evaluator",
    "GraphExecutor",
    "GraphExecutorFactoryModule",
    "GraphPlan",
    "Interpreter",
    "PlanLowering",
    "build",
    "create_executor",
    "get_codegen",
    "register_codegen",
]
