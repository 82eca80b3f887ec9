"""``CallGraph``: which global functions of a module refer to which.

An edge ``f -> g`` means ``@g`` appears in ``f``'s body (called or used as a
value), counted once per function however often it appears. ``ref_count(g)`` is the
number of functions with an edge to ``g``; ``global_call_count(f)`` the number of
distinct globals ``f`` refers to. Built with one post-order walk per function
(linear in the module's size); recursion is found iteratively.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule, GlobalVar
>>> x = relay.var("x", shape=(2,))
>>> mod = IRModule()
>>> g = GlobalVar("g")
>>> mod[g] = relay.Function([x], x + x)
>>> mod["main"] = relay.Function([x], g(g(x)))
>>> cg = CallGraph(mod)
>>> cg.ref_count(g), cg.global_call_count("main"), cg.is_recursive("main")
(1, 1, False)
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import IRError
from relaykit.ir.expr import GlobalVar
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule

__all__ = ["CallGraph", "CallGraphEntry", "reachable_globals"]


class CallGraphEntry:
    """One global function of a call graph: its callees (in first-use order) and
    how many functions refer to it."""

    def __init__(self, global_var: GlobalVar) -> None:
        self.global_var = global_var
        self.callees: list[CallGraphEntry] = []
        self.ref_count = 0

    @property
    def name_hint(self) -> str:
        return self.global_var.name_hint

    def __str__(self) -> str:
        lines = [f"Call graph node: {self.name_hint}, #refs = {self.ref_count}"]
        lines += [f"  call site: <{self.name_hint}> calls {c.name_hint}" for c in self.callees]
        return "\n".join(lines) + "\n"

    __repr__ = __str__


class CallGraph:
    """``relay.analysis.CallGraph(mod)``: the call graph of ``mod``'s global functions."""

    def __init__(self, module: IRModule) -> None:
        if not isinstance(module, IRModule):
            raise IRError(f"CallGraph needs an IRModule, got {type(module).__name__}")
        self.module = module
        self._entries: dict[str, CallGraphEntry] = {
            gv.name_hint: CallGraphEntry(gv) for gv in module.get_global_vars()
        }
        for gv, fn in module.items():
            entry = self._entries[gv.name_hint]
            for node in post_order(fn):
                if type(node) is GlobalVar:
                    callee = self._entries.get(node.name_hint)
                    if callee is None:  # a global the module does not define
                        callee = self._entries[node.name_hint] = CallGraphEntry(node)
                    entry.callees.append(callee)
                    callee.ref_count += 1

    def _entry(self, var: Any) -> CallGraphEntry:
        name = var.name_hint if isinstance(var, GlobalVar) else var
        if not isinstance(name, str) or name not in self._entries:
            raise IRError(f"@{name} is not a global function of the call graph's module")
        return self._entries[name]

    def print_var(self, global_var: GlobalVar | str) -> str:
        """The entry of one global function, as text."""
        return str(self._entry(global_var))

    def global_call_count(self, global_var: GlobalVar | str) -> int:
        """How many distinct globals the function refers to."""
        return len(self._entry(global_var).callees)

    def ref_count(self, global_var: GlobalVar | str) -> int:
        """How many functions refer to the global."""
        return self._entry(global_var).ref_count

    def callees(self, global_var: GlobalVar | str) -> list[GlobalVar]:
        """The globals the function refers to, in first-use order."""
        return [c.global_var for c in self._entry(global_var).callees]

    def is_recursive(self, global_var: GlobalVar | str) -> bool:
        """Whether the function can reach itself through its callees."""
        start = self._entry(global_var)
        seen: set[int] = set()
        stack = list(start.callees)
        while stack:
            entry = stack.pop()
            if entry is start:
                return True
            if id(entry) in seen:
                continue
            seen.add(id(entry))
            stack.extend(entry.callees)
        return False

    def __str__(self) -> str:
        return "CallGraph:\n" + "".join(str(e) for e in self._entries.values())

    __repr__ = __str__


def reachable_globals(module: IRModule, roots: list[str]) -> set[str]:
    """Names of the globals reachable from the functions ``roots`` (roots included
    when they are defined)."""
    graph = CallGraph(module)
    seen: set[str] = set()
    stack = [r for r in roots if module.contains_global_var(r)]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(
            gv.name_hint for gv in graph.callees(name) if module.contains_global_var(gv.name_hint)
        )
    return seen
