"""Reading the planned devices back: the virtual device of every sub-expression.

After ``PlanDevices`` the devices are written lexically: a function and its
parameters carry theirs, a fixed ``on_device`` places its body, and anything else
is on the device of the nearest enclosing one. :func:`recover_virtual_device_map`
reads them back into ``{expr: VirtualDevice}`` (TVM's
``relay.transform.RecoverVirtualDeviceMap``, a global function there); operators
and constructors have no device and are left out.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], x + x)))
>>> config = tvm.target.make_compilation_config(None, ["llvm"])
>>> planned = relay.transform.PlanDevices(config)(mod)
>>> found = recover_virtual_device_map(planned, planned["main"])
>>> sorted({vd.device_type for vd in found.values()}), len(found)
([1], 3)
"""

from __future__ import annotations

from relaykit.ir.adt import Constructor, Match
from relaykit.ir.expr import Call, Expr, Function, GlobalVar, Let, Var
from relaykit.ir.fields import CHILDREN_OF
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.runtime.registry import register_func
from relaykit.target import VirtualDevice
from relaykit.target.virtual_device import FULLY_UNCONSTRAINED

from .device_domains import on_device_props

__all__ = ["recover_virtual_device_map"]

_POP_DEVICE = object()


def recover_virtual_device_map(mod: IRModule | None, expr: Expr) -> dict[Expr, VirtualDevice]:
    """The virtual device of each sub-expression of ``expr`` (an unplaced one maps to
    the fully unconstrained device); ``mod`` gives the devices of global functions."""
    globals_vd: dict[str, VirtualDevice] = {}
    if mod is not None:
        for gv, fn in mod.functions.items():
            if isinstance(fn, Function) and fn.virtual_device_:
                globals_vd[gv.name_hint] = fn.virtual_device_
    lexical: list[VirtualDevice] = []
    var_vd: dict[Var, VirtualDevice] = {}
    out: dict[Expr, VirtualDevice] = {}
    seen: set[int] = set()
    keep: list[Expr] = []

    def device_of(e: Expr) -> VirtualDevice:
        props = on_device_props(e)
        if props is not None and props[2] and props[3]:
            return props[1]
        t = type(e)
        if t is Var:
            return var_vd.get(e, FULLY_UNCONSTRAINED)
        if t is GlobalVar:
            return globals_vd.get(e.name_hint, FULLY_UNCONSTRAINED)
        if t is Function and not e.attrs.get("Primitive", 0):
            return e.virtual_device_
        return lexical[-1] if lexical else FULLY_UNCONSTRAINED

    stack: list[object] = [expr]
    while stack:
        item = stack.pop()
        if item is _POP_DEVICE:
            lexical.pop()
            continue
        e: Expr = item  # type: ignore[assignment]
        if not isinstance(e, (Op, Constructor)):
            out[e] = device_of(e)
        if id(e) in seen:
            continue
        seen.add(id(e))
        keep.append(e)
        t = type(e)
        props = on_device_props(e) if t is Call else None
        if props is not None and props[2] and props[3]:
            lexical.append(props[1])
            stack.append(_POP_DEVICE)
            stack.append(props[0])
            continue
        if t is Function and not e.attrs.get("Primitive", 0):
            for p in e.params:
                if p.virtual_device_:
                    var_vd[p] = p.virtual_device_
            lexical.append(e.virtual_device_)
            stack.append(_POP_DEVICE)
            stack.append(e.body)
            stack.extend(reversed(e.params))
            continue
        if t is Let:
            # the variable is on its value's device; then var, value, body in turn
            vd = device_of(e.value)
            if vd:
                var_vd[e.var] = vd
            stack.append(e.body)
            stack.append(e.value)
            stack.append(e.var)
            continue
        kids = CHILDREN_OF[t](e)
        if t is Match:
            kids = (e.data, *(c.rhs for c in e.clauses))
        stack.extend(reversed(kids))
    return out


register_func("relay.transform.RecoverVirtualDeviceMap", recover_virtual_device_map, override=True)
