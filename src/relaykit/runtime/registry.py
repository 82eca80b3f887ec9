"""Global functions by name, as TVM's ``tvm.register_func`` / ``tvm.get_global_func``.

BYOC codegens are found here under ``relay.ext.<target>`` (see
:mod:`relaykit.backend.codegen`). The registry is an object a test can snapshot
and restore.

>>> with func_registry.scoped():
...     @register_func("demo.twice")
...     def twice(x):
...         return 2 * x
...     get_global_func("demo.twice")(21)
42
>>> get_global_func("demo.twice", allow_missing=True) is None
True
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Callable, Iterator
from typing import Any

from relaykit.errors import RelayKitError

__all__ = [
    "FunctionRegistry",
    "func_registry",
    "register_func",
    "get_global_func",
    "list_global_func_names",
    "remove_global_func",
]


class FunctionRegistry:
    """Named callables. Registering a taken name needs ``override=True``."""

    def __init__(self) -> None:
        self._funcs: dict[str, Callable[..., Any]] = {}

    def register(self, name: str, fn: Callable[..., Any], override: bool = False) -> None:
        if not isinstance(name, str) or not name:
            raise RelayKitError(f"a global function name must be a non-empty string, got {name!r}")
        if not callable(fn):
            raise RelayKitError(f"global function {name!r} must be callable, got {fn!r}")
        if name in self._funcs and not override and self._funcs[name] is not fn:
            raise RelayKitError(
                f"global function {name!r} is already registered; pass override=True to replace it"
            )
        self._funcs[name] = fn

    def get(self, name: str) -> Callable[..., Any] | None:
        return self._funcs.get(name)

    def remove(self, name: str) -> None:
        self._funcs.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._funcs)

    def snapshot(self) -> dict[str, Callable[..., Any]]:
        return dict(self._funcs)

    def restore(self, snap: dict[str, Callable[..., Any]]) -> None:
        self._funcs = dict(snap)

    @contextlib.contextmanager
    def scoped(self) -> Iterator[FunctionRegistry]:
        """Registrations made inside the block are undone at its end."""
        snap = self.snapshot()
        try:
            yield self
        finally:
            self.restore(snap)


func_registry = FunctionRegistry()


def register_func(
    func_name: str | Callable[..., Any], f: Callable[..., Any] | None = None, override: bool = False
) -> Any:
    """Register ``f`` as the global function ``func_name``; a decorator when ``f`` is omitted.

    As in TVM, ``@register_func`` on a plain function registers it under its own name.
    """
    if callable(func_name) and f is None:
        fn = func_name
        func_registry.register(fn.__name__, fn, override)
        return fn

    def _register(fn: Callable[..., Any]) -> Callable[..., Any]:
        func_registry.register(str(func_name), fn, override)
        return fn

    return _register(f) if f is not None else _register


def get_global_func(name: str, allow_missing: bool = False) -> Callable[..., Any] | None:
    """The global function ``name``; ``None`` if missing and ``allow_missing``."""
    fn = func_registry.get(name)
    if fn is None and not allow_missing:
        close = difflib.get_close_matches(name, func_registry.names(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise RelayKitError(f"global function {name!r} is not registered{hint}")
    return fn


def list_global_func_names() -> list[str]:
    return func_registry.names()


def remove_global_func(name: str) -> None:
    func_registry.remove(name)
