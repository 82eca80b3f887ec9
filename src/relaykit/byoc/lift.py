"""Lift external function literals to global functions, so their backend compiles them.

TVM accepts a partitioned function written inline: a call whose callee is a
function literal carrying a ``Compiler`` attribute (what TVM's tests build by
hand with ``set_external_func_attr``). ``relay.build`` hands such a function to
the backend's codegen exactly as if ``PartitionGraph`` had made it a global
function. :func:`lift_external_functions` does that rewrite: each such literal
becomes a global function named by its ``global_symbol`` attribute (or
``<compiler>_<k>`` when it has none) and its calls call that global.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x, a = relay.var("x", shape=(2,)), relay.var("a", shape=(2,))
>>> ext = relay.Function([a], relay.abs(a)).with_attr("Compiler", "ccompiler")
>>> ext = ext.with_attr("global_symbol", "ccompiler_0")
>>> mod = tvm.IRModule.from_expr(relay.Function([x], relay.Call(ext, [x])))
>>> sorted(gv.name_hint for gv in lift_external_functions(mod).get_global_vars())
['ccompiler_0', 'main']
"""

from __future__ import annotations

import operator

from relaykit.ir.expr import Call, Expr, Function, GlobalVar
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule

from ._common import PartitionError

__all__ = ["lift_external_functions"]


def _plain_attrs(fn: Function) -> Function:
    """``fn`` with integer-like attribute values (TVM's ``tir.IntImm(\"int32\", 1)``, which
    TVM's tests put in ``Primitive``) as plain ints, so that every backend, and the text
    format a backend may write its functions in, sees ``Primitive=1``."""
    fixed = {
        k: operator.index(v)
        for k, v in fn.attrs.items()
        if type(v) not in (bool, int, float, str) and hasattr(v, "__index__")
    }
    return fn.without_attrs(*fixed).with_attrs(fixed) if fixed else fn


def _is_external(fn: Expr) -> bool:
    return isinstance(fn, Function) and bool(fn.attrs) and bool(fn.attrs.get("Compiler"))


def lift_external_functions(mod: IRModule) -> IRModule:
    """``mod`` with every called function literal that has a ``Compiler`` attribute made a
    global function (see the module docstring), and integer-like attribute values of
    external functions as ints; ``mod`` itself when there is nothing to change.

    A ``global_symbol`` that names a different existing global function is a
    :class:`~relaykit.errors.PartitionError`.
    """
    lifted: dict[Function, GlobalVar] = {}
    taken = {gv.name_hint for gv in mod.get_global_vars()}
    new_funcs: list[tuple[GlobalVar, Function]] = []

    def global_for(literal: Function) -> GlobalVar:
        gv = lifted.get(literal)
        if gv is not None:
            return gv
        fn = _plain_attrs(literal)
        compiler = str(fn.attrs["Compiler"])
        symbol = fn.attrs.get("global_symbol")
        if symbol is not None:
            name = str(symbol)
            if name in taken:
                raise PartitionError(
                    f"the external function for {compiler!r} has global_symbol {name!r}, "
                    "which another function of the module already uses: give each "
                    "external function a unique global_symbol"
                )
        else:
            k = 0
            while f"{compiler}_{k}" in taken:
                k += 1
            name = f"{compiler}_{k}"
            fn = fn.with_attr("global_symbol", name)
        taken.add(name)
        gv = GlobalVar(name)
        lifted[literal] = gv
        new_funcs.append((gv, fn))
        return gv

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is Call and isinstance(new.op, Function) and _is_external(new.op):
            return Call(global_for(new.op), new.args, new.attrs, new.type_args, new.span)
        return None

    changed: dict[GlobalVar, Function] = {}
    for gv, fn in mod.items():
        if fn.attrs and fn.attrs.get("Compiler"):
            plain = _plain_attrs(fn)
            if plain is not fn:
                changed[gv] = plain
            continue
        body = rewrite_post_order(fn.body, post)
        if body is not fn.body:
            changed[gv] = fn.with_fields(body=body)
    if not changed:
        return mod
    out = mod.copy()
    for gv, fn in new_funcs:
        out[gv] = fn
    for gv, fn in changed.items():
        out[gv] = fn
    return out
