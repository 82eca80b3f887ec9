"""``tvm.runtime.container``: the runtime's tuple and constructor values (:class:`ADT`).

The VM, the interpreter and the evaluator return tuples and constructor values as
:class:`ADT` objects (a ``tag`` and fields), as TVM's runtime does; an ADT is a Python
tuple of its fields.

>>> obj = ADT(0, [1, 2])
>>> len(obj), obj.tag, list(obj)
(2, 0, [1, 2])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

__all__ = ["ADT", "ConstructorValue", "RefValue", "tuple_object"]


class ADT(tuple[Any, ...]):
    """A tuple or constructor value: a ``tag`` and fields (TVM's ``runtime.container.ADT``).

    Tuples have tag 0. An ADT is a Python tuple of its fields, so a tuple result can be
    unpacked, indexed, sliced and compared with a tuple as before; two ADTs are equal
    when their tags and fields are. Fields are NumPy arrays, ADTs or closures inside
    the machine; values handed to users are :class:`~relaykit.runtime.NDArray`.

    >>> ADT(0, [1, 2]) == (1, 2), ADT(3, [1]) == ADT(4, [1])
    (True, False)
    """

    tag: int

    def __new__(cls, tag: int, fields: Sequence[Any] = ()) -> ADT:
        obj = super().__new__(cls, fields)
        obj.tag = int(tag)
        return obj

    @property
    def fields(self) -> list[Any]:
        """The fields, as a new list."""
        return list(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ADT) and other.tag != self.tag:
            return False
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self.tag, tuple(self))

    def __repr__(self) -> str:
        return f"ADT(tag={self.tag}, {list(self)!r})"


class ConstructorValue(ADT):
    """A value built by an ADT constructor: its ``tag``, ``fields`` and the
    ``constructor`` itself (TVM's ``relay.backend.interpreter.ConstructorValue``).

    >>> v = ConstructorValue(1, [], None)
    >>> v.tag, v.fields, isinstance(v, ADT)
    (1, [], True)
    """

    constructor: Any

    def __new__(
        cls, tag: int, fields: Sequence[Any] = (), constructor: Any = None
    ) -> ConstructorValue:
        obj = cast(ConstructorValue, super().__new__(cls, tag, fields))
        obj.constructor = constructor
        return obj

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self.tag, tuple(self), self.constructor)

    def __repr__(self) -> str:
        name = getattr(self.constructor, "name_hint", f"tag {self.tag}")
        return f"ConstructorValue({name}, {list(self)!r})"


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
