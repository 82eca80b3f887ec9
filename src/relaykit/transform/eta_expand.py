"""``EtaExpand``: a global function or constructor used as a value becomes a function
literal that calls it.

``@aux`` (not called) becomes ``fn (%x) { @aux(%x) }`` with the global's parameter
types, and ``Cons`` becomes ``fn [A](%x: A, %xs: List[A]) -> List[A] { Cons(%x, %xs) }``;
each kind is expanded only when asked. Uses in call position stay. One post-order
rewrite per function.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule, GlobalVar
>>> x = relay.var("x", shape=(2,))
>>> mod = IRModule()
>>> aux = GlobalVar("aux")
>>> mod[aux] = relay.Function([x], x)
>>> mod["main"] = relay.Function([], aux)
>>> out = EtaExpand(expand_global_var=True)(mod)["main"].body
>>> type(out).__name__, out.body.op.name_hint
('Function', 'aux')
"""

from __future__ import annotations

from relaykit.ir.adt import Constructor, TypeCall
from relaykit.ir.expr import Call, Expr, Function, GlobalVar, Var, checked_type_or_none
from relaykit.ir.functor import post_order, rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.types import FuncType

from .infer_type import infer_module
from .pass_infra import ModulePass, PassContext

__all__ = ["EtaExpand", "eta_expand"]


def _expand_global(gv: GlobalVar, mod: IRModule) -> Expr:
    if not mod.contains_global_var(gv.name_hint):
        return gv
    fn = mod[gv]
    params = [
        Var(
            p.name_hint,
            p.type_annotation or checked_type_or_none(p),
            virtual_device=p.virtual_device_,
        )
        for p in fn.params
    ]
    ret = fn.ret_type
    ty = checked_type_or_none(fn)
    if ret is None and isinstance(ty, FuncType):
        ret = ty.ret_type
    return Function(params, Call(gv, list(params)), ret, fn.type_params)


def _expand_constructor(con: Constructor, mod: IRModule) -> Expr:
    data = mod.type_data_of(con.belong_to)
    type_vars = list(data.type_vars) if data is not None else []
    params = [Var(f"x{i}", t) for i, t in enumerate(con.inputs)]
    ret = TypeCall(con.belong_to, type_vars) if type_vars else con.belong_to
    return Function(params, Call(con, list(params)), ret, type_vars)


def eta_expand(
    expr: Expr, mod: IRModule, expand_constructor: bool = False, expand_global_var: bool = False
) -> Expr:
    """``expr`` with globals and constructors used as values (not called) expanded."""
    callees: set[int] = set()
    for node in post_order(expr):
        if type(node) is Call:
            callees.add(id(node.op))

    def post(new: Expr, old: Expr) -> Expr | None:
        if id(old) in callees:
            return None
        if expand_global_var and type(new) is GlobalVar:
            return _expand_global(new, mod)
        if expand_constructor and type(new) is Constructor:
            return _expand_constructor(new, mod)
        return None

    return rewrite_post_order(expr, post)


class EtaExpand(ModulePass):
    """``relay.transform.EtaExpand(expand_constructor=False, expand_global_var=False)``
    (opt_level 1)."""

    def __init__(self, expand_constructor: bool = False, expand_global_var: bool = False) -> None:
        self.expand_constructor = expand_constructor
        self.expand_global_var = expand_global_var
        super().__init__(self._transform, opt_level=1, name="EtaExpand")

    def _transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if not (self.expand_constructor or self.expand_global_var):
            return mod
        out = mod.copy()
        changed = False
        for gv, fn in mod.items():
            new = eta_expand(fn, mod, self.expand_constructor, self.expand_global_var)
            if new is not fn and isinstance(new, Function):
                out._add(gv, new)
                changed = True
        if not changed:
            return mod
        infer_module(out)
        return out
