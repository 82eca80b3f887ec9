"""Pattern tables of external backends (TVM's ``relay.op.contrib``).

A backend's pattern table lists the composite patterns its codegen understands;
``MergeComposite(get_pattern_table("X"))`` then wraps every match in a composite
function whose ``Composite`` attribute names the pattern::

    @register_pattern_table("mylib")
    def pattern_table():
        conv = is_op("nn.conv2d")(wildcard(), wildcard())
        return [("mylib.conv2d_relu", is_op("nn.relu")(conv))]

A table is the ``patterns`` field of the backend's
:class:`~relaykit.backends.Backend` record: :func:`register_pattern_table` sets it
(as in TVM, the decorated function is called once, when it is registered) and
:func:`get_pattern_table` reads it, loading a built-in backend by name. A test
scopes it with the backend registry:

>>> from relaykit.backends import backend_registry
>>> with backend_registry.scoped():
...     _ = register_pattern_table("demo", lambda: [])
...     get_pattern_table("demo")
[]
>>> get_pattern_table("demo") is None
True
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from relaykit.backends import backend_registry, find_backend, update_backend
from relaykit.errors import IRError

__all__ = [
    "PatternTable",
    "register_pattern_table",
    "get_pattern_table",
    "list_pattern_tables",
]

#: A pattern table: ``(name, pattern)`` or ``(name, pattern, check)`` entries.
PatternTable = Sequence[tuple[Any, ...]]


def _check_table(compiler: str, table: Any) -> list[tuple[Any, ...]]:
    if not isinstance(table, (list, tuple)):
        raise IRError(
            f"the pattern table of {compiler!r} must be a list of (name, pattern[, check]) "
            f"tuples, got {type(table).__name__}"
        )
    entries = []
    for i, entry in enumerate(table):
        if not isinstance(entry, (list, tuple)) or len(entry) not in (2, 3):
            raise IRError(
                f"entry {i} of the pattern table of {compiler!r} must be (name, pattern) or "
                f"(name, pattern, check), got {entry!r}"
            )
        entries.append(tuple(entry))
    return entries


def register_pattern_table(compiler: str, table: Callable[[], PatternTable] | None = None) -> Any:
    """Register the pattern table of ``compiler``; usable as a decorator.

    ``table`` is a function returning the table; it is called right away.
    """

    def _register(fn: Callable[[], PatternTable]) -> Callable[[], PatternTable]:
        if not callable(fn):
            raise IRError(
                f"register_pattern_table({compiler!r}, ...) takes a function returning the "
                f"table, got {type(fn).__name__}"
            )
        update_backend(str(compiler), patterns=tuple(_check_table(compiler, fn())))
        return fn

    return _register(table) if table is not None else _register


def get_pattern_table(compiler: str) -> list[tuple[Any, ...]] | None:
    """The pattern table of backend ``compiler`` (its record's ``patterns``), or None."""
    backend = find_backend(compiler)
    table = None if backend is None else backend.pattern_table()
    return None if table is None else _check_table(compiler, table)


def list_pattern_tables() -> list[str]:
    """Names of the (loaded) backends that have a pattern table."""
    return sorted(n for n, b in backend_registry.items() if b.patterns is not None)


def __getattr__(name: str) -> ModuleType:
    # TVM imports every backend's module into relay.op.contrib. relaykit's backends are
    # optional and heavy, so ``relay.op.contrib.<backend>`` is made on first use from the
    # names the backend's record exports (``Backend.exports``), found through the backend
    # registry: this layer never imports a backend's code itself.
    backend = find_backend(name) if not name.startswith("_") else None
    if backend is None or not backend.exports:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = ModuleType(
        f"{__name__}.{name}", f"TVM's relay.op.contrib.{name}: {backend.description}"
    )
    module.__dict__.update(backend.exports)
    module.__all__ = sorted(backend.exports)  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    globals()[name] = module
    return module
