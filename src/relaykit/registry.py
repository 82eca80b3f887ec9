"""One registry class for every table in relaykit.

Operators' attribute tables, backends, codegens, pattern tables, runtime loaders
and global functions are all :class:`Registry` objects: a named mapping with an
owner, a clear error for a missing key (with close matches), and
``snapshot`` / ``restore`` / ``scoped`` so a test can change a registry and put
it back.

>>> reg: Registry[str, int] = Registry("colours")
>>> reg.register("red", 1)
1
>>> with reg.scoped():
...     _ = reg.register("blue", 2)
...     sorted(reg)
['blue', 'red']
>>> sorted(reg)
['red']
>>> reg["green"]
Traceback (most recent call last):
...
relaykit.errors.RegistryKeyError: no colours named 'green' (registered: red)
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar, overload

from .errors import RegistryKeyError, RelayKitError

__all__ = ["Registry"]

K = TypeVar("K")
V = TypeVar("V")
_MISSING: Any = object()


class Registry(Mapping[K, V], Generic[K, V]):
    """A named, resettable mapping from keys to registered values.

    ``kind`` names what the registry holds, for error messages ("backend",
    "codegen" ...). ``register(key, value)`` refuses to replace an entry unless
    ``override=True``; ``register(key)`` used as a decorator registers the
    decorated object. A ``fallback(key)`` hook may produce values on demand
    (lazy loading); what it returns is cached.
    """

    def __init__(
        self,
        kind: str,
        *,
        fallback: Callable[[K], V | None] | None = None,
    ) -> None:
        self.kind = kind
        self._entries: dict[K, V] = {}
        self._fallback = fallback

    # -- Mapping --------------------------------------------------------------------
    def __getitem__(self, key: K) -> V:
        try:
            return self._entries[key]
        except KeyError:
            pass
        value = self._load(key)
        if value is _MISSING:
            raise RegistryKeyError(self._missing_message(key))
        return value

    def __iter__(self) -> Iterator[K]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        if key in self._entries:
            return True
        return self._load(key) is not _MISSING  # type: ignore[arg-type]

    def get(self, key: K, default: Any = None) -> Any:
        try:
            return self._entries[key]
        except KeyError:
            pass
        value = self._load(key)
        return default if value is _MISSING else value

    # -- registration ---------------------------------------------------------------
    @overload
    def register(self, key: K) -> Callable[[V], V]: ...

    @overload
    def register(self, key: K, value: V, *, override: bool = False) -> V: ...

    def register(self, key: K, value: Any = _MISSING, *, override: bool = False) -> Any:
        """Register ``value`` under ``key`` (or, with no value, a decorator that does)."""
        if value is _MISSING:

            def decorate(obj: V) -> V:
                return self.register(key, obj, override=override)

            return decorate
        if not override and key in self._entries and self._entries[key] is not value:
            raise RelayKitError(
                f"a {self.kind} named {key!r} is already registered; "
                "pass override=True to replace it"
            )
        self._entries[key] = value
        return value

    def unregister(self, key: K) -> V:
        """Remove ``key`` and return what was registered under it."""
        try:
            return self._entries.pop(key)
        except KeyError:
            raise RegistryKeyError(self._missing_message(key)) from None

    # -- test support ---------------------------------------------------------------
    def snapshot(self) -> dict[K, V]:
        """A copy of the entries, to pass to :meth:`restore` later."""
        return dict(self._entries)

    def restore(self, snap: Mapping[K, V]) -> None:
        """Put the entries back as they were when ``snap`` was taken."""
        self._entries.clear()
        self._entries.update(snap)

    @contextlib.contextmanager
    def scoped(self) -> Iterator[Registry[K, V]]:
        """Changes made inside the block are undone when it ends."""
        snap = self.snapshot()
        try:
            yield self
        finally:
            self.restore(snap)

    # -- internals --------------------------------------------------------------------
    def _load(self, key: K) -> Any:
        if self._fallback is None:
            return _MISSING
        value = self._fallback(key)
        if value is None:
            return _MISSING
        self._entries[key] = value
        return value

    def _missing_message(self, key: K) -> str:
        names = sorted(str(k) for k in self._entries)
        close = difflib.get_close_matches(str(key), names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        listing = ", ".join(names) if len(names) <= 12 else f"{len(names)} entries"
        return f"no {self.kind} named {key!r} (registered: {listing or 'none'}){hint}"

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} entries)"
