"""``tvm.runtime.convert``: Python values as the runtime's containers.

TVM turns lists into ``Array`` objects and dicts into ``Map`` s; relaykit's IR takes
Python lists, tuples and dicts directly, so ``convert`` returns them as lists and
dicts (recursively), and every other value (numbers, strings, IR nodes) unchanged.

>>> convert((1, [2, 3]))
[1, [2, 3]]
"""

from __future__ import annotations

from typing import Any

__all__ = ["convert"]


def convert(value: Any, span: Any = None) -> Any:
    """``value`` with tuples and lists as lists and mappings as dicts, recursively."""
    if isinstance(value, (list, tuple)):
        return [convert(v) for v in value]
    if isinstance(value, dict):
        return {k: convert(v) for k, v in value.items()}
    return value
