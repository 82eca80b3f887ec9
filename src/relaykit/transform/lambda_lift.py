"""``LambdaLift``: move every local function to a global one of the module.

A local function without free variables becomes a global ``@lifted_nameN`` and is
referred to by its ``GlobalVar``. One that captures variables becomes a global taking
the captured variables and returning the function (marked ``Closure=1``), and is
replaced by a call of that global on them. A ``let``-bound function that calls
itself refers to its global instead of its variable. Fused (``Primitive``) and
``Composite`` functions stay in place; functions handed to a backend (``Compiler``)
are left alone. Inner functions are lifted before the outer ones (one post-order
rewrite per global function).

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
>>> inner = relay.Function([y], x + y)
>>> mod = IRModule.from_expr(relay.Function([x], inner(x)))
>>> sorted(gv.name_hint for gv in LambdaLift()(mod).get_global_vars())
['lifted_name0', 'main']
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Call, Expr, Function, GlobalVar, Let, Var
from relaykit.ir.functor import post_order, rewrite_post_order
from relaykit.ir.module import IRModule

from .bind import bind
from .infer_type import infer_module
from .pass_infra import ModulePass, PassContext

__all__ = ["LambdaLift", "lambda_lift"]

_KEEP_ATTRS = ("Primitive", "Composite", "Compiler")


def _kept(fn: Function) -> bool:
    return any(fn.attrs.get(key) for key in _KEEP_ATTRS)


class _Lifter:
    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.lifted: list[tuple[GlobalVar, Function]] = []
        self.taken = {gv.name_hint for gv in mod.get_global_vars()}
        self.counter = 0

    def _fresh(self) -> GlobalVar:
        while f"lifted_name{self.counter}" in self.taken:
            self.counter += 1
        name = f"lifted_name{self.counter}"
        self.taken.add(name)
        return GlobalVar(name)

    def lift_in(self, top: Function) -> Function:
        """``top`` with each function nested in its body lifted."""
        # a let-bound function's variable, to replace recursive references by the global
        letrec: dict[int, Var] = {}
        for node in post_order(top.body):
            if type(node) is Let and type(node.value) is Function:
                letrec[id(node.value)] = node.var

        def post(new: Expr, old: Expr) -> Expr | None:
            if type(new) is not Function or _kept(new):
                return None
            return self._lift(new, letrec.get(id(old)))

        body = rewrite_post_order(top.body, post)
        return top if body is top.body else top.with_fields(body=body)

    def _lift(self, fn: Function, self_var: Var | None) -> Expr:
        captured = [v for v in free_vars(fn) if v is not self_var]
        gv = self._fresh()
        ref: Expr = Call(gv, list(captured)) if captured else gv
        if self_var is not None and any(v is self_var for v in free_vars(fn)):
            fn = fn.with_fields(body=bind(fn.body, {self_var: ref}))
        if captured:
            inner = fn.with_attr("Closure", 1)
            params = [Var(v.name_hint, v.type_annotation) for v in captured]
            body = bind(inner, dict(zip(captured, params, strict=True)))
            lifted = Function(params, body)
        else:
            lifted = fn
        self.lifted.append((gv, lifted))
        return ref


def lambda_lift(mod: IRModule) -> IRModule:
    """A copy of ``mod`` whose functions contain no local function (but fused ones)."""
    lifter = _Lifter(mod)
    out = mod.copy()
    changed: dict[GlobalVar, Any] = {}
    for gv, fn in mod.items():
        if fn.attrs.get("Compiler"):
            continue
        new = lifter.lift_in(fn)
        if new is not fn:
            changed[gv] = new
    if not lifter.lifted:
        return mod
    for gv, fn in changed.items():
        out._add(gv, fn)
    for gv, fn in lifter.lifted:
        out._add(gv, fn)
    infer_module(out)
    return out


class LambdaLift(ModulePass):
    """``relay.transform.LambdaLift()`` (opt_level 0)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="LambdaLift")

    @staticmethod
    def _transform(mod: IRModule, ctx: PassContext) -> IRModule:
        return lambda_lift(mod)
