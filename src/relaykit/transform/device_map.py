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
from relaykit.ir.expr import Expr, Function, GlobalVar, Let, Var
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
    return _Recovery(mod).run(expr)


class _Recovery:
    """A pre-order walk keeping the lexical device (a stack) and the bound variables'."""

    def __init__(self, mod: IRModule | None) -> None:
        self.globals_vd: dict[str, VirtualDevice] = {}
        if mod is not None:
            for gv, fn in mod.functions.items():
                if isinstance(fn, Function) and fn.virtual_device_:
                    self.globals_vd[gv.name_hint] = fn.virtual_device_
        self.lexical: list[VirtualDevice] = []
        self.var_vd: dict[Var, VirtualDevice] = {}

    def device_of(self, e: Expr) -> VirtualDevice:
        props = on_device_props(e)
        if props is not None and props[2] and props[3]:
            return props[1]
        if isinstance(e, Var):
            return self.var_vd.get(e, FULLY_UNCONSTRAINED)
        if isinstance(e, GlobalVar):
            return self.globals_vd.get(e.name_hint, FULLY_UNCONSTRAINED)
        if isinstance(e, Function) and not e.attrs.get("Primitive", 0):
            return e.virtual_device_
        return self.lexical[-1] if self.lexical else FULLY_UNCONSTRAINED

    def run(self, expr: Expr) -> dict[Expr, VirtualDevice]:
        out: dict[Expr, VirtualDevice] = {}
        seen: set[int] = set()
        keep: list[Expr] = []  # keeps visited nodes alive so that their ids stay unique
        stack: list[object] = [expr]
        while stack:
            item = stack.pop()
            if item is _POP_DEVICE:
                self.lexical.pop()
                continue
            e: Expr = item  # type: ignore[assignment]
            if not isinstance(e, (Op, Constructor)):
                out[e] = self.device_of(e)  # every visit, as TVM's map is written
            if id(e) in seen:
                continue
            seen.add(id(e))
            keep.append(e)
            stack.extend(reversed(self.expand(e)))
        return out

    def expand(self, e: Expr) -> list[object]:
        """What to visit after ``e``, in order (with ``_POP_DEVICE`` markers)."""
        props = on_device_props(e)
        if props is not None and props[2] and props[3]:
            self.lexical.append(props[1])
            return [props[0], _POP_DEVICE]
        if isinstance(e, Function) and not e.attrs.get("Primitive", 0):
            for p in e.params:
                if p.virtual_device_:
                    self.var_vd[p] = p.virtual_device_
            self.lexical.append(e.virtual_device_)
            return [*e.params, e.body, _POP_DEVICE]
        if isinstance(e, Let):  # the variable is on its value's device
            vd = self.device_of(e.value)
            if vd:
                self.var_vd[e.var] = vd
            return [e.var, e.value, e.body]
        if isinstance(e, Match):
            return [e.data, *(c.rhs for c in e.clauses)]
        return list(CHILDREN_OF[type(e)](e))


register_func("relay.transform.RecoverVirtualDeviceMap", recover_virtual_device_map, override=True)
