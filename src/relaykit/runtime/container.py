"""``tvm.runtime.container``: the runtime's tuple and constructor values (:class:`ADT`).

The VM, the interpreter and the evaluator return tuples and constructor values as
:class:`ADT` objects (a ``tag`` and fields), as TVM's runtime does.

>>> obj = ADT(0, [1, 2])
>>> len(obj), obj.tag, list(obj)
(2, 0, [1, 2])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["ADT", "ConstructorValue", "RefValue", "tuple_object"]


class ADT:
    """A tuple or constructor value: a ``tag`` and fields (TVM's ``runtime.container.ADT``).

    Tuples have tag 0. Fields are NumPy arrays, ADTs or closures inside the
    machine; values handed to users are :class:`~relaykit.runtime.NDArray`.
    """

    __slots__ = ("fields", "tag")

    def __init__(self, tag: int, fields: Sequence[Any]) -> None:
        self.tag = int(tag)
        self.fields = list(fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, index: int) -> Any:
        return self.fields[index]

    def __iter__(self) -> Any:
        return iter(self.fields)

    def __repr__(self) -> str:
        return f"ADT(tag={self.tag}, {self.fields!r})"


class ConstructorValue(ADT):
    """A value built by an ADT constructor: its ``tag``, ``fields`` and the
    ``constructor`` itself (TVM's ``relay.backend.interpreter.ConstructorValue``).

    >>> v = ConstructorValue(1, [], None)
    >>> v.tag, v.fields, isinstance(v, ADT)
    (1, [], True)
    """

    __slots__ = ("constructor",)

    def __init__(self, tag: int, fields: Sequence[Any], constructor: Any = None) -> None:
        super().__init__(tag, fields)
        self.constructor = constructor

    def __repr__(self) -> str:
        name = getattr(self.constructor, "name_hint", f"tag {self.tag}")
        return f"ConstructorValue({name}, {self.fields!r})"


class RefValue:
    """A mutable reference cell made by ``ref(v)``; ``value`` is what it holds now.

    >>> r = RefValue(1)
    >>> r.value = 2
    >>> r.value
    2
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"RefValue({self.value!r})"


def tuple_object(fields: Sequence[Any] = ()) -> ADT:
    """A runtime tuple of ``fields`` (an :class:`ADT` with tag 0)."""
    return ADT(0, fields)
