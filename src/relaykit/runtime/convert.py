"""``tvm.runtime.convert``: Python values as the runtime's containers.

TVM turns lists into immutable ``Array`` objects and dicts into ``Map`` s; relaykit's
IR holds sequences as tuples, so ``convert`` returns sequences as tuples and mappings
as dicts (recursively), and every other value (numbers, strings, IR nodes) unchanged:
a node built from a converted list holds an equal sequence (``tup.fields == fields``).

>>> convert((1, [2, 3]))
(1, (2, 3))
"""

from __future__ import annotations

from typing import Any

__all__ = ["convert"]


def convert(value: Any, span: Any = None) -> Any:
    """``value`` with tuples and lists as tuples and mappings as dicts, recursively."""
    if isinstance(value, (list, tuple)):
        return tuple(convert(v) for v in value)
    if isinstance(value, dict):
        return {k: convert(v) for k, v in value.items()}
    return value
