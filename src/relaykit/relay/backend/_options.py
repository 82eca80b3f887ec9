"""The shared shape of ``Executor`` and ``Runtime``: a kind and its checked options.

Each kind lists its options with a type and a default (TVM's registered attributes):
an object holds every option, the given ones checked by type, the others at their
defaults. Errors read as TVM's (``Executor "woof" is not defined``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from relaykit.errors import ArgumentError

#: TVM's names of the option types (what ``list_registered_options`` reports).
TYPE_KEYS: dict[type, str] = {bool: "runtime.BoxBool", int: "runtime.BoxInt", str: "runtime.String"}


def _type_key(value: Any) -> str:
    for typ in (bool, int, str, float):
        if isinstance(value, typ):
            return TYPE_KEYS.get(typ, "runtime.BoxFloat")
    return type(value).__name__


def _fits(value: Any, typ: type) -> bool:
    if typ is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, typ)


class KindWithOptions:
    """A named kind with options from a fixed table (per kind): ``{option: (type, default)}``."""

    what: ClassVar[str]
    kinds: ClassVar[Mapping[str, Mapping[str, tuple[type, Any]]]]

    def __init__(self, name: str, options: Mapping[str, Any] | None = None) -> None:
        table = self._table(name)
        label = self.what.capitalize()
        checked: dict[str, Any] = {key: default for key, (_, default) in table.items()}
        for key, value in dict(options or {}).items():
            entry = table.get(key)
            if entry is None:
                known = ", ".join(sorted(table)) or "none"
                raise ArgumentError(
                    f'Attribute "{key}" is not available on this {label} '
                    f"({label.lower()} {name!r} has the options: {known})"
                )
            if not _fits(value, entry[0]):
                raise ArgumentError(
                    f'Attribute "{key}" should have type "{TYPE_KEYS[entry[0]]}" but instead '
                    f'found "{_type_key(value)}" (in {label}({name!r}))'
                )
            checked[key] = value
        self.name = name
        self.attrs = checked

    @classmethod
    def _table(cls, name: Any) -> Mapping[str, tuple[type, Any]]:
        name = name.name if isinstance(name, KindWithOptions) else str(name)
        table = cls.kinds.get(name)
        if table is None:
            known = ", ".join(sorted(cls.kinds))
            raise ArgumentError(
                f'{cls.what.capitalize()} "{name}" is not defined; the {cls.what}s are: {known}'
            )
        return table

    @classmethod
    def list_registered(cls) -> list[str]:
        """The names of the kinds (TVM's ``Executor.list_registered()``)."""
        return sorted(cls.kinds)

    @classmethod
    def list_registered_options(cls, name: Any) -> dict[str, str]:
        """Each option of kind ``name`` with TVM's name of its type:
        ``{"interface-api": "runtime.String", ...}``."""
        return {key: TYPE_KEYS[typ] for key, (typ, _) in cls._table(name).items()}

    def __getitem__(self, key: str) -> Any:
        return self.attrs[key]

    def __contains__(self, key: object) -> bool:
        return key in self.attrs

    def __iter__(self) -> Iterator[str]:
        return iter(self.attrs)

    def get(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        return (self.name, self.attrs) == (other.name, other.attrs)

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.attrs.items()))))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        table = self._table(self.name)
        given = {k: v for k, v in self.attrs.items() if v != table[k][1]}
        opts = f", {given!r}" if given else ""
        return f"{type(self).__name__}({self.name!r}{opts})"
