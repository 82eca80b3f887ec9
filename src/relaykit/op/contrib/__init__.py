"""Pattern tables of external backends (TVM's ``relay.op.contrib``).

A backend registers the composite patterns its codegen understands under its
target name; ``MergeComposite(get_pattern_table("X"))`` then wraps every match
in a composite function whose ``Composite`` attribute names the pattern::

    @register_pattern_table("mylib")
    def pattern_table():
        conv = is_op("nn.conv2d")(wildcard(), wildcard())
        return [("mylib.conv2d_relu", is_op("nn.relu")(conv))]

As in TVM, the decorated function is called once, when it is registered, and
its result is what :func:`get_pattern_table` returns. Tables live in
:data:`pattern_table_registry`, which a test can snapshot and restore:

>>> with pattern_table_registry.scoped():
...     _ = register_pattern_table("demo", lambda: [])
...     get_pattern_table("demo")
[]
>>> get_pattern_table("demo") is None
True
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from relaykit.errors import IRError

__all__ = [
    "PatternTable",
    "PatternTableRegistry",
    "pattern_table_registry",
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


class PatternTableRegistry:
    """Pattern tables by compiler name."""

    def __init__(self) -> None:
        self._tables: dict[str, list[tuple[Any, ...]]] = {}

    def register(self, compiler: str, table: PatternTable) -> None:
        """Set the table of ``compiler`` (a later registration replaces an earlier one)."""
        self._tables[str(compiler)] = _check_table(compiler, table)

    def get(self, compiler: str) -> list[tuple[Any, ...]] | None:
        table = self._tables.get(compiler)
        return None if table is None else list(table)

    def names(self) -> list[str]:
        return sorted(self._tables)

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        return dict(self._tables)

    def restore(self, snap: dict[str, list[tuple[Any, ...]]]) -> None:
        self._tables = dict(snap)

    @contextlib.contextmanager
    def scoped(self) -> Iterator[PatternTableRegistry]:
        """Registrations made inside the block are undone at its end."""
        snap = self.snapshot()
        try:
            yield self
        finally:
            self.restore(snap)


pattern_table_registry = PatternTableRegistry()


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
        pattern_table_registry.register(compiler, fn())
        return fn

    return _register(table) if table is not None else _register


def get_pattern_table(compiler: str) -> list[tuple[Any, ...]] | None:
    """The pattern table registered for ``compiler``, or None."""
    return pattern_table_registry.get(compiler)


def list_pattern_tables() -> list[str]:
    """Names of the compilers that registered a pattern table."""
    return pattern_table_registry.names()


def __getattr__(name: str) -> Any:
    # Backends shipped with relaykit: relay.op.contrib.dnnl.partition_for_dnnl etc.
    if name in ("dnnl",):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
