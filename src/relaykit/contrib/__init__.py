"""Real backends and TVM's ``tvm.contrib`` helpers, one folder or module each.

- :mod:`.graph_executor`: ``GraphModule`` and ``create`` (``tvm.contrib.graph_executor``).
- :mod:`.ccompiler`: a C-source backend compiled by the system C compiler.
- :mod:`.jsonref`: a JSON-graph backend with its own NumPy kernels.

Importing a backend's package registers its rules, patterns and codegen.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any


def __getattr__(name: str) -> Any:
    # ``tvm.contrib.graph_executor`` works after ``import relaykit as tvm``, as in TVM.
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'relaykit.contrib' has no attribute {name!r}")
