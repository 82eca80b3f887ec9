"""``tvm.ir.supply``: fresh names and fresh global variables.

A :class:`NameSupply` hands out names that are unique among those it has seen,
optionally behind a prefix; a :class:`GlobalVarSupply` hands out
:class:`~relaykit.ir.GlobalVar` objects, one per name, and fresh ones on request.

>>> names = NameSupply("prefix")
>>> names.reserve_name("test")
'prefix_test'
>>> names.fresh_name("test"), names.contains_name("test_1")
('prefix_test_1', True)
>>> supply = GlobalVarSupply()
>>> supply.unique_global_for("f") is supply.unique_global_for("f")
True
>>> supply.fresh_global("f").name_hint
'f_1'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from relaykit.errors import ArgumentError

from .expr import GlobalVar
from .module import IRModule

__all__ = ["NameSupply", "GlobalVarSupply"]


class NameSupply:
    """Unique names, each optionally prefixed with ``prefix_``."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = str(prefix)
        self._counters: dict[str, int] = {}

    def _prefixed(self, name: str, add_prefix: bool) -> str:
        if add_prefix and self.prefix:
            return f"{self.prefix}_{name}"
        return name

    def reserve_name(self, name: str, add_prefix: bool = True) -> str:
        """Mark ``name`` (with the prefix) as taken and return it."""
        full = self._prefixed(name, add_prefix)
        self._counters.setdefault(full, 0)
        return full

    def contains_name(self, name: str, add_prefix: bool = True) -> bool:
        """Whether ``name`` (with the prefix) has been handed out or reserved."""
        return self._prefixed(name, add_prefix) in self._counters

    def fresh_name(self, name: str, add_prefix: bool = True, add_underscore: bool = True) -> str:
        """A name not taken yet: ``name`` itself, else ``name_1``, ``name_2``, ..."""
        full = self._prefixed(name, add_prefix)
        if full not in self._counters:
            self._counters[full] = 0
            return full
        sep = "_" if add_underscore else ""
        n = self._counters[full]
        while True:
            n += 1
            candidate = f"{full}{sep}{n}"
            if candidate not in self._counters:
                self._counters[full] = n
                self._counters[candidate] = 0
                return candidate


class GlobalVarSupply:
    """Global variables by name: the same one for a name (:meth:`unique_global_for`),
    or a new one with a fresh name (:meth:`fresh_global`).

    Built from nothing, a :class:`NameSupply`, or an ``IRModule`` (or several), whose
    global variables it reserves.
    """

    def __init__(self, value: Any = None) -> None:
        self.name_supply = NameSupply()
        self._globals: dict[str, GlobalVar] = {}
        if value is None:
            return
        if isinstance(value, NameSupply):
            self.name_supply = value
            return
        modules = [value] if isinstance(value, IRModule) else value
        if not isinstance(modules, Iterable):
            raise ArgumentError(
                "GlobalVarSupply takes a NameSupply, an IRModule or a list of IRModules, "
                f"got {type(value).__name__}"
            )
        for mod in modules:
            if not isinstance(mod, IRModule):
                raise ArgumentError(f"GlobalVarSupply: {mod!r} is not an IRModule")
            for gv in mod.get_global_vars():
                self.reserve_global(gv)

    def reserve_global(self, global_var: GlobalVar, allow_conflict: bool = True) -> None:
        """Make ``global_var`` the one returned for its name."""
        name = global_var.name_hint
        if not allow_conflict and name in self._globals:
            raise ArgumentError(f"a global variable named {name!r} is already reserved")
        self._globals[name] = global_var
        self.name_supply.reserve_name(name, add_prefix=False)

    def unique_global_for(self, name: str, add_prefix: bool = True) -> GlobalVar:
        """The global variable of ``name`` (with the prefix), made on first request."""
        full = self.name_supply.reserve_name(name, add_prefix)
        gv = self._globals.get(full)
        if gv is None:
            gv = self._globals[full] = GlobalVar(full)
        return gv

    def fresh_global(self, name: str, add_prefix: bool = True) -> GlobalVar:
        """A new global variable whose name no other one has."""
        full = self.name_supply.fresh_name(name, add_prefix)
        gv = self._globals[full] = GlobalVar(full)
        return gv
