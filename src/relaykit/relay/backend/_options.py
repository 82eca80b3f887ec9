"""The shared shape of ``Executor`` and ``Runtime``: a kind and its checked options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from relaykit.errors import ArgumentError


class KindWithOptions:
    """A named kind with options from a fixed table (per kind)."""

    what: ClassVar[str]
    kinds: ClassVar[Mapping[str, Mapping[str, type]]]

    def __init__(self, name: str, options: Mapping[str, Any] | None = None) -> None:
        table = self.kinds.get(name)
        if table is None:
            raise ArgumentError(
                f"unknown {self.what} {name!r}; known: {', '.join(sorted(self.kinds))}"
            )
        checked: dict[str, Any] = {}
        for key, value in dict(options or {}).items():
            typ = table.get(key)
            if typ is None:
                known = ", ".join(sorted(table)) or "none"
                raise ArgumentError(
                    f"{self.what} {name!r} has no option {key!r} (its options: {known})"
                )
            checked[key] = typ(value)
        self.name = name
        self.attrs = checked

    def __getitem__(self, key: str) -> Any:
        return self.attrs[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        return (self.name, self.attrs) == (other.name, other.attrs)

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.attrs.items()))))

    def __repr__(self) -> str:
        opts = f", {self.attrs!r}" if self.attrs else ""
        return f"{type(self).__name__}({self.name!r}{opts})"
