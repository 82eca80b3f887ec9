"""Run TVM scripts unchanged: ``import tvm`` resolves to relaykit, when asked for.

:func:`use_as_tvm` installs an import alias: ``import tvm``, ``from tvm import
relay``, ``from tvm.relay.dataflow_pattern import *``, ``from tvm.contrib import
graph_executor`` give relaykit's modules themselves (``tvm.relay is
relaykit.relay``). It is never installed by importing relaykit, and no package
named ``tvm`` is written anywhere. ``python -m relaykit.tvm script.py [args]``
(or ``relaykit tvm script.py``) runs a script with the alias installed.

A module path ``tvm.a.b`` is relaykit's ``relaykit.a.b`` when that module exists,
else the attribute ``b`` of ``relaykit.a`` when it is a module
(``tvm.relay.transform`` is ``relaykit.relay.transform``).

>>> use_as_tvm()
>>> import tvm
>>> from tvm import relay
>>> import relaykit
>>> tvm is relaykit and relay is relaykit.relay
True
>>> remove_tvm_alias()
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import runpy
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from relaykit.errors import ArgumentError, RelayKitError

__all__ = ["use_as_tvm", "remove_tvm_alias", "run_script", "main"]

_ROOT = "relaykit"


class _AliasLoader(importlib.abc.Loader):
    """Hands out an already-imported relaykit module under its ``tvm.*`` name."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self.module

    def exec_module(self, module: ModuleType) -> None:
        # the import system set __spec__/__name__ to the tvm.* ones: give the real back
        real_spec = getattr(self, "_real_spec", None)
        if real_spec is not None:
            module.__spec__ = real_spec


class TvmAliasFinder(importlib.abc.MetaPathFinder):
    """Resolves ``tvm`` and ``tvm.*`` to relaykit modules (see the module docstring)."""

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "tvm" and not fullname.startswith("tvm."):
            return None
        real = self._resolve(fullname)
        if real is None:
            return None  # -> ModuleNotFoundError: No module named 'tvm.x'
        loader = _AliasLoader(real)
        loader._real_spec = real.__spec__  # type: ignore[attr-defined]
        return importlib.util.spec_from_loader(
            fullname, loader, is_package=hasattr(real, "__path__")
        )

    @staticmethod
    def _resolve(fullname: str) -> ModuleType | None:
        if fullname == "tvm":
            return importlib.import_module(_ROOT)
        parent_name, _, child = fullname.rpartition(".")
        parent = sys.modules.get(parent_name)
        if parent is None:
            return None
        candidate = f"{parent.__spec__.name if parent.__spec__ else parent.__name__}.{child}"
        try:
            return importlib.import_module(candidate)
        except ModuleNotFoundError as err:
            if err.name is None or not (
                candidate == err.name or candidate.startswith(err.name + ".")
            ):
                raise
        attr = getattr(parent, child, None)
        return attr if isinstance(attr, ModuleType) else None


def _installed() -> TvmAliasFinder | None:
    return next((f for f in sys.meta_path if isinstance(f, TvmAliasFinder)), None)


def use_as_tvm() -> None:
    """Make ``import tvm`` (and every ``tvm.*`` module path) resolve to relaykit.

    Refuses when a real TVM is already imported in this process.
    """
    existing = sys.modules.get("tvm")
    if existing is not None and existing is not importlib.import_module(_ROOT):
        raise RelayKitError(
            f"a module named 'tvm' is already imported ({getattr(existing, '__file__', '?')}); "
            "call relaykit.use_as_tvm() before anything imports TVM, or run the script with "
            "`python -m relaykit.tvm script.py`"
        )
    if _installed() is None:
        sys.meta_path.insert(0, TvmAliasFinder())


def remove_tvm_alias() -> None:
    """Undo :func:`use_as_tvm`: remove the finder and the ``tvm.*`` module entries."""
    finder = _installed()
    if finder is not None:
        sys.meta_path.remove(finder)
    for name in [n for n in sys.modules if n == "tvm" or n.startswith("tvm.")]:
        del sys.modules[name]


def run_script(path: str, args: Sequence[str] = ()) -> None:
    """Run the Python script ``path`` as ``__main__`` with the alias installed."""
    use_as_tvm()
    old_argv = sys.argv
    sys.argv = [path, *args]
    try:
        runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = old_argv


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m relaykit.tvm script.py [args...]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(
            "usage: python -m relaykit.tvm SCRIPT [ARGS...]\n\n"
            "Run a TVM script with `import tvm` resolving to relaykit.\n"
            "example: python -m relaykit.tvm relay_quick_start.py"
        )
        return 0 if args else 2
    if not args[0].endswith(".py"):
        raise ArgumentError(f"expected a Python script (.py), got {args[0]!r}")
    run_script(args[0], args[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
