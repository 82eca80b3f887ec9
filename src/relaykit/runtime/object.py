"""``tvm.runtime.Object``: the name of TVM's base object class.

relaykit's runtime values are plain Python classes (NDArray, ADT, modules) and
do not derive from it; it exists for code that imports or subclasses it.
"""

from __future__ import annotations

__all__ = ["Object"]


class Object:
    """Base class name kept from TVM's object system (no behaviour)."""

    __slots__ = ()
