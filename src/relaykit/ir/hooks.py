"""The printer hook: how ``Expr.astext``, ``str(expr)`` and ``IRModule.astext`` reach the
text printer, which lives in :mod:`relaykit.text`, a layer above the IR.

``relaykit.text`` installs its printer when it is imported (``import relaykit`` always
imports it). The IR never imports the text layer; without a printer installed,
printing raises :class:`relaykit.errors.IRError` saying what to import.

>>> from relaykit.ir.hooks import printer_hook
>>> callable(printer_hook().astext)
True
"""

from __future__ import annotations

from typing import Any, Protocol

from relaykit.errors import IRError

__all__ = [
    "Printer",
    "has_printer",
    "install_printer",
    "printer_hook",
    "register_std_file",
    "std_file_loader",
]


class Printer(Protocol):
    """What the IR needs from a printer."""

    def astext(self, node: Any, show_meta_data: bool = True, annotate: Any = None) -> str: ...

    def context_lines(self, root: Any, node: Any) -> str: ...


_PRINTER: list[Printer] = []


def install_printer(printer: Printer) -> None:
    """Make ``printer`` the one the IR prints with (the text layer calls this)."""
    _PRINTER[:] = [printer]


def printer_hook() -> Printer:
    """The installed printer; :class:`IRError` when none is."""
    if not _PRINTER:
        raise IRError(
            "no Relay text printer is installed: import relaykit.text (importing relaykit "
            "does) before printing IR"
        )
    return _PRINTER[0]


def has_printer() -> bool:
    return bool(_PRINTER)


# Relay's standard-library files by name ("nat.rly"): each loader adds the file's
# definitions to a module. The layers that can read them (the text parser, the
# Prelude) register their files when imported.
_STD_FILES: dict[str, Any] = {}


def register_std_file(name: str, loader: Any) -> None:
    """Make ``IRModule.import_from_std(name)`` call ``loader(mod)``."""
    _STD_FILES[name] = loader


def std_file_loader(name: str) -> Any:
    """The loader of the standard-library file ``name``, or ``None``."""
    return _STD_FILES.get(name)
