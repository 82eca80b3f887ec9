"""``Inline``: substitute calls of global functions marked ``Inline=1`` by their bodies.

A function handed to a backend (``Compiler`` attribute) is inlined as TVM does: its
call sites call the function itself (a function literal), which stays whole for the
backend, instead of its body.

Callees are inlined before callers, so chains of inlinable functions flatten
completely; an inlined function that nothing refers to any more is removed from
the module (``main`` is always kept; one still used as a value stays). A
recursive function marked ``Inline`` is an error.

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
from .infer_type import infer_module
from .pass_infra import ModulePass, PassContext

__all__ = ["Inline", "inline_calls"]


def _inlinable(fn: Function) -> bool:
    value = fn.attrs.get("Inline") if hasattr(fn.attrs, "get") else None
    return bool(value)


def inline_calls(expr: Expr, bodies: dict[str, Function]) -> Expr:
    """``expr`` with each ``@g(args)`` whose ``g`` is in ``bodies`` replaced by the body."""

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is Call and type(new.op) is GlobalVar:
            fn = bodies.get(new.op.name_hint)
            if fn is not None:
                if len(fn.params) != len(new.args):
                    raise IRError(
                        f"@{new.op.name_hint} takes {len(fn.params)} arguments, "
                        f"called with {len(new.args)}"
                    )
                if "Compiler" in fn.attrs:  # as TVM: a backend's function stays a function
                    return Call(fn, new.args, span=new.span)
                return bind(fn.body, dict(zip(fn.params, new.args, strict=True)))
        return None

    return rewrite_post_order(expr, post)


def _order(mod: IRModule, names: list[str]) -> list[str]:
    """Inlinable functions, callees first; a cycle among them is an error."""
    state: dict[str, int] = {}
    order: list[str] = []
    wanted = set(names)
    for start in names:
        stack = [(start, False)]
        while stack:
            name, ready = stack.pop()
            if ready:
                state[name] = 2
                order.append(name)
                continue
            if state.get(name) == 2:
                continue
            if state.get(name) == 1:
                raise IRError(f"@{name} is marked Inline but is recursive; it cannot be inlined")
            state[name] = 1
            stack.append((name, True))
            for gv in mod.global_refs(name):
                if gv.name_hint in wanted and state.get(gv.name_hint) != 2:
                    if state.get(gv.name_hint) == 1:
                        raise IRError(
                            f"@{gv.name_hint} is marked Inline but is recursive; "
                            "it cannot be inlined"
                        )
                    stack.append((gv.name_hint, False))
    return order


class Inline(ModulePass):
    """``relay.transform.Inline()`` (opt_level 1)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=1, name="Inline")

    @staticmethod
    def _transform(mod: IRModule, ctx: PassContext) -> IRModule:
        names = [gv.name_hint for gv, fn in mod.items() if _inlinable(fn)]
        if not names:
            return mod
        bodies: dict[str, Function] = {}
        for name in _order(mod, names):
            fn = mod[name]
            new = inline_calls(fn, bodies)
            bodies[name] = new if isinstance(new, Function) else fn
        kept: dict[str, Function] = {}
        for gv, fn in mod.items():
            if gv.name_hint in bodies and gv.name_hint != "main":
                continue
            new = inline_calls(fn, bodies)
            kept[gv.name_hint] = new if isinstance(new, Function) else fn
        # an inlined function still referred to as a value (not called) stays
        pending = list(kept.values())
        while pending:
            for node in post_order(pending.pop()):
                if type(node) is not GlobalVar:
                    continue
                name = node.name_hint
                if name in bodies and name not in kept:
                    kept[name] = bodies[name]
                    pending.append(bodies[name])
        out = mod.copy()
        for gv in mod.get_global_vars():
            if gv.name_hint in kept:
                out._add(gv, kept[gv.name_hint])
            else:
                out.remove(gv)
        infer_module(out)
        return out
