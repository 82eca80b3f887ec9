"""``Inline``: substitute calls of global functions marked ``Inline=1`` by their bodies.

A function handed to a backend (``Compiler`` attribute) is inlined as TVM does: its
call sites call the function itself (a function literal), which stays whole for the
backend, instead of its body.

As in TVM, a function marked ``Inline`` is inlined where it is referred to when it
is not recursive and refers to no other global (after its own callees were
inlined, callees first): a call becomes the body with the arguments bound, a use
as a value becomes the function itself. Functions nothing referred to (entry
functions such as ``main``) stay; an inlinable function inlined everywhere it was
referred to is removed. A recursive function keeps its ``Inline`` mark unused.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule, GlobalVar
>>> x = relay.var("x", shape=(2,))
>>> mod = IRModule()
>>> double = GlobalVar("double")
>>> mod[double] = relay.Function([x], x + x).with_attr("Inline", 1)
>>> y = relay.var("y", shape=(2,))
>>> mod["main"] = relay.Function([y], double(y))
>>> out = Inline()(mod)
>>> [gv.name_hint for gv in out.get_global_vars()], out["main"].body.op.name
(['main'], 'add')
"""

from __future__ import annotations

from relaykit.errors import IRError
from relaykit.ir.expr import Call, Expr, Function, GlobalVar
from relaykit.ir.functor import post_order, rewrite_post_order
from relaykit.ir.module import IRModule

from .bind import bind
from .call_graph import CallGraph
from .infer_type import infer_module
from .pass_infra import ModulePass, PassContext

__all__ = ["Inline", "inline_calls"]


def _inlinable(fn: Function) -> bool:
    value = fn.attrs.get("Inline") if hasattr(fn.attrs, "get") else None
    return bool(value)


def _kept_whole(fn: Function) -> bool:
    """A backend's (``Compiler``) or external function: inlined as a function literal."""
    return "Compiler" in fn.attrs or bool(fn.attrs.get("Extern"))


def inline_calls(expr: Expr, bodies: dict[str, Function]) -> Expr:
    """``expr`` with each reference to a global in ``bodies`` inlined: ``@g(args)``
    becomes the body with ``args`` bound, a use of ``@g`` as a value the function."""
    literals = {
        name: Function(fn.params, fn.body, fn.ret_type, fn.type_params, fn.attrs)
        for name, fn in bodies.items()
    }
    names = {id(f): n for n, f in literals.items()}

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is GlobalVar and new.name_hint in literals:
            return literals[new.name_hint]
        if type(new) is Call and id(new.op) in names:
            fn = bodies[names[id(new.op)]]
            if _kept_whole(fn):  # as TVM: a backend's function stays a function
                return None
            if len(fn.params) != len(new.args):
                raise IRError(
                    f"@{names[id(new.op)]} takes {len(fn.params)} arguments, "
                    f"called with {len(new.args)}"
                )
            return bind(fn.body, dict(zip(fn.params, new.args, strict=True)))
        return None

    return rewrite_post_order(expr, post)


def _refs(fn: Expr) -> set[str]:
    return {n.name_hint for n in post_order(fn) if type(n) is GlobalVar}


class Inline(ModulePass):
    """``relay.transform.Inline()`` (opt_level 1): see the module docs."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=1, name="Inline")

    @staticmethod
    def _transform(mod: IRModule, ctx: PassContext) -> IRModule:
        funcs = {gv.name_hint: fn for gv, fn in mod.items() if isinstance(fn, Function)}
        if not any(_inlinable(fn) for fn in funcs.values()):
            return mod
        graph = CallGraph(mod)
        recursive = {name for name in funcs if graph.is_recursive(name)}
        referred = {r for fn in funcs.values() for r in _refs(fn)}
        done: dict[str, Function] = {}
        inlinable: dict[str, Function] = {}
        for name in _callees_first(funcs):
            fn = funcs[name]
            new = inline_calls(fn, {g: inlinable[g] for g in _refs(fn) if g in inlinable})
            fn = new if isinstance(new, Function) else fn
            done[name] = fn
            if _inlinable(fn) and name not in recursive and not _refs(fn):
                inlinable[name] = fn
        out = mod.copy()
        still = {r for fn in done.values() for r in _refs(fn)}
        for gv in mod.get_global_vars():
            name = gv.name_hint
            if name in inlinable and name in referred and name not in still:
                out.remove(gv)
            elif name in done:
                out._add(gv, done[name])
        infer_module(out)
        return out


def _callees_first(funcs: dict[str, Function]) -> list[str]:
    """The functions in an order where callees come before their callers (cycles broken
    at the first function met)."""
    order: list[str] = []
    state: dict[str, int] = {}
    for start in funcs:
        stack = [(start, False)]
        while stack:
            name, ready = stack.pop()
            if ready:
                if state.get(name) != 2:
                    state[name] = 2
                    order.append(name)
                continue
            if state.get(name):
                continue
            state[name] = 1
            stack.append((name, True))
            for callee in sorted(_refs(funcs[name])):
                if callee in funcs and not state.get(callee):
                    stack.append((callee, False))
    return order
