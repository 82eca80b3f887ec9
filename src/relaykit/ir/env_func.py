"""``tvm.ir.EnvFunc``: a global function referred to by its registered name.

IR values that name a function (a :class:`~relaykit.ir.types.TypeRelation`'s
relation) hold an ``EnvFunc``; it is compared by name and looked up in the
global function registry when called, so it survives printing and serialising.

>>> from relaykit.runtime.registry import register_func
>>> _ = register_func("example.twice", lambda x: 2 * x, override=True)
>>> f = EnvFunc.get("example.twice")
>>> f(21), f == EnvFunc.get("example.twice")
(42, True)
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import IRError
from relaykit.runtime.registry import get_global_func

__all__ = ["EnvFunc"]


class EnvFunc:
    """The global function ``name`` (see :func:`relaykit.runtime.registry.register_func`)."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise IRError(f"an EnvFunc is named by a non-empty string, got {name!r}")
        object.__setattr__(self, "name", name)

    def __setattr__(self, key: str, value: Any) -> None:
        raise IRError("EnvFunc is immutable")

    @staticmethod
    def get(name: str) -> EnvFunc:
        """The function registered as ``name``; it is looked up when called."""
        return EnvFunc(name)

    @property
    def func(self) -> Any:
        """The registered Python callable (a ``RegistryKeyError`` if there is none)."""
        return get_global_func(self.name)

    def __call__(self, *args: Any) -> Any:
        return self.func(*args)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EnvFunc) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("EnvFunc", self.name))

    def __repr__(self) -> str:
        return f"EnvFunc({self.name!r})"
