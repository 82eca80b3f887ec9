"""``tvm.runtime.name_transforms``: make a name usable as a C identifier.

>>> sanitize_name("input:0+")
'input_0_'
"""

from __future__ import annotations

import re

from relaykit.errors import ArgumentError

__all__ = ["sanitize_name"]


def sanitize_name(name: str) -> str:
    """``name`` with every character that is not a letter, digit or ``_`` replaced by ``_``."""
    if not name:
        raise ArgumentError("Name is empty")
    return re.sub(r"[^0-9A-Za-z_]", "_", name)
