"""``RemoveUnusedFunctions``: drop the global functions no entry function reaches.

A global is kept when an entry function (``main`` by default) refers to it, directly
or through other kept functions, called or used as a value. Type definitions stay.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2,))
>>> mod = IRModule()
>>> mod["unused"] = relay.Function([x], x + x)
>>> mod["main"] = relay.Function([x], relay.exp(x))
>>> [gv.name_hint for gv in RemoveUnusedFunctions()(mod).get_global_vars()]
['main']
"""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.ir.module import IRModule

from .call_graph import reachable_globals
from .pass_infra import ModulePass, PassContext

__all__ = ["RemoveUnusedFunctions", "remove_unused_functions"]


def remove_unused_functions(mod: IRModule, entry_functions: Sequence[str] = ("main",)) -> IRModule:
    """A copy of ``mod`` holding only the functions reachable from ``entry_functions``."""
    keep = reachable_globals(mod, list(entry_functions))
    if len(keep) == len(mod.get_global_vars()):
        return mod
    out = mod.copy()
    for gv in mod.get_global_vars():
        if gv.name_hint not in keep:
            out.remove(gv)
    return out


class RemoveUnusedFunctions(ModulePass):
    """``relay.transform.RemoveUnusedFunctions(entry_functions=None)`` (opt_level 1)."""

    def __init__(self, entry_functions: Sequence[str] | None = None) -> None:
        self.entry_functions = tuple(entry_functions or ("main",))
        super().__init__(self._transform, opt_level=1, name="RemoveUnusedFunctions")

    def _transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return remove_unused_functions(mod, self.entry_functions)
