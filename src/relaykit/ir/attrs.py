"""Attributes: frozen, ordered name -> value maps for operator calls and functions.

Values are normalised to hashable Python values: lists become tuples (an
:class:`Array`, which prints as TVM's ``[1, 1]``), NumPy scalars become Python
numbers, so two equal attribute sets compare and hash equal.

>>> a = Attrs({"units": 128, "strides": [1, 1]})
>>> a.units, a["strides"], a["strides"] == (1, 1)
(128, [1, 1], True)
>>> a.with_updates(units=64)["units"]
64
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from relaykit.errors import AttrError, ImmutableError

__all__ = ["Array", "Attrs", "DictAttrs", "normalize_attr_value", "make_node"]


class Array(tuple[Any, ...]):
    """A list-valued attribute: a tuple (hashable, equal to the same values as a tuple)
    that prints as TVM's ``Array`` does.

    >>> a = Array((2, 3))
    >>> str(a), a == (2, 3), a[0]
    ('[2, 3]', True, 2)
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "[" + ", ".join(repr(v) for v in self) + "]"

    __str__ = __repr__


def _plain(value: Any) -> Any:
    """``value`` with every :class:`Array` a plain tuple (for :meth:`Attrs.__repr__`)."""
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def normalize_attr_value(value: Any) -> Any:
    """Convert ``value`` to the frozen form stored in :class:`Attrs`."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return normalize_attr_value(value.tolist())
    if isinstance(value, (list, tuple)):
        return Array(normalize_attr_value(v) for v in value)
    if isinstance(value, Mapping):
        return Attrs(value)
    # Types and other frozen IR values are allowed as-is if hashable.
    try:
        hash(value)
    except TypeError:
        raise AttrError(
            f"attribute value {value!r} of type {type(value).__name__} cannot be stored: "
            "use numbers, strings, booleans, None or (nested) lists of them"
        ) from None
    return value


class Attrs(Mapping[str, Any]):
    """An immutable, ordered attribute map with attribute-style access."""

    __slots__ = ("_items", "_hash", "type_key")

    _items: dict[str, Any]
    _hash: int | None
    type_key: str

    def __init__(self, items: Mapping[str, Any] | None = None, type_key: str = "DictAttrs"):
        normalized = {str(k): normalize_attr_value(v) for k, v in (items or {}).items()}
        object.__setattr__(self, "_items", normalized)
        object.__setattr__(self, "_hash", None)
        object.__setattr__(self, "type_key", type_key)

    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError("Attrs are immutable; use with_updates(...)")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        items = object.__getattribute__(self, "_items")
        try:
            return items[name]
        except KeyError:
            known = ", ".join(items) or "none"
            raise AttributeError(f"attrs have no field {name!r} (fields: {known})") from None

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash(tuple(self._items.items()))
            object.__setattr__(self, "_hash", h)
        return h

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Attrs):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={_plain(v)!r}" for k, v in self._items.items())
        return f"{self.type_key}({body})"

    def keys(self):
        return self._items.keys()

    def list_field_info(self) -> list[str]:
        return list(self._items)

    def with_updates(self, **updates: Any) -> Attrs:
        """A copy with some fields replaced (``self`` when nothing changes)."""
        if all(
            k in self._items and self._items[k] == normalize_attr_value(v)
            for k, v in updates.items()
        ):
            return self
        merged = dict(self._items)
        merged.update(updates)
        return Attrs(merged, self.type_key)

    def without(self, *keys: str) -> Attrs:
        if not any(k in self._items for k in keys):
            return self
        return Attrs({k: v for k, v in self._items.items() if k not in keys}, self.type_key)

    # TVM's typed getters.
    def get_int(self, key: str) -> int:
        return int(self._items[key])

    def get_int_tuple(self, key: str) -> tuple[int, ...]:
        return tuple(int(v) for v in self._items[key])

    def get_str(self, key: str) -> str:
        return str(self._items[key])


#: TVM's name for function attributes.
DictAttrs = Attrs


def make_node(type_key: str, **fields: Any) -> Attrs:
    """An attribute node by its type key (TVM's ``tvm.ir.make_node``), e.g.
    ``make_node("DictAttrs", call_attr="x")``. relaykit's only reflective nodes are
    attributes: a key that names another kind of node is an error.

    >>> make_node("relay.attrs.TestAttrs", padding=(3, 4)).padding
    [3, 4]
    """
    if not (type_key == "DictAttrs" or type_key.endswith("Attrs")):
        raise AttrError(
            f"make_node builds attribute nodes (type keys ending in 'Attrs'), not "
            f"{type_key!r}; build IR nodes with their constructors (relay.Var, relay.Call...)"
        )
    return Attrs(fields, type_key)
